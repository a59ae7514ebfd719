// Loading an artifact for an engine: the plan, kernels and weights (Runner), the tokenizer
// and template (TextCodec), with WebLLM's progress reports ({progress, timeElapsed, text})
// and an AbortSignal checked between stages. The artifact's files come from the browser's
// cache when an earlier load kept them (artifact_files.js, weights.js).

import { ArtifactFiles } from "./artifact_files.js";
import { localArtifact } from "./local_files.js";
import { Runner } from "./runner.js";
import { TextCodec } from "./tokenizer.js";
import { VisionEncoder } from "./vision.js";

const mb = (n) => (n / 2 ** 20).toFixed(1);

// Runner status -> WebLLM's InitProgressReport.
function report(status, started) {
  const timeElapsed = (performance.now() - started) / 1000;
  if (status.stage === "vision") {
    return { progress: 0.99, timeElapsed, text: `image encoder ${mb(status.done)} / ${mb(status.total)} MB`, ...status };
  }
  if (status.stage === "weights") {
    const from = status.cached ? "from the browser cache" : "downloading";
    return { progress: 0.2 + 0.8 * (status.done / (status.total || 1)), timeElapsed,
             text: `weights ${mb(status.done)} / ${mb(status.total)} MB (${from})`, ...status };
  }
  const progress = status.total ? 0.2 * (status.done / status.total) : 0;
  const text = status.total ? `compiling kernels ${status.done}/${status.total}` : "opening the GPU";
  return { progress, timeElapsed, text, ...status };
}

// `files`: the artifact's files picked from disk (local_files.js); `artifactUrl` is then ignored.
export async function loadModel(artifactUrl, { initProgressCallback, signal, kvBlocks = 128, shardsUrl, files } = {}) {
  const local = files ? localArtifact(files) : null;
  const base = local?.base ?? new URL(artifactUrl, globalThis.location?.href);
  const kept = local ? null : await ArtifactFiles.open(base, (url, init) => fetch(url, init));
  const fetchFn = local?.fetchFn ?? kept.fetch;
  const started = performance.now();
  const onStatus = (s) => {
    signal?.throwIfAborted();
    initProgressCallback?.(report(s, started));
  };
  signal?.throwIfAborted();
  // Best effort: ask the browser not to evict the weights' cache under storage pressure
  // (persist() exists in pages only, not in workers).
  await Promise.resolve(globalThis.navigator?.storage?.persist?.()).catch(() => false);
  const [runner, codec] = await Promise.all([
    Runner.load(base, kvBlocks, onStatus, shardsUrl && new URL(shardsUrl, base), fetchFn),
    TextCodec.load(base, fetchFn),
  ]);
  signal?.throwIfAborted();
  // the image encoder (vision/), where the artifact has one, on the text model's device
  const vision = await VisionEncoder.load(runner, base, fetchFn, onStatus);
  await kept?.commit();
  initProgressCallback?.({ progress: 1, timeElapsed: (performance.now() - started) / 1000, text: "ready" });
  return { runner, codec, vision };
}
