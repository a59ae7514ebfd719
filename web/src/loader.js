// Loading an artifact for an engine: the plan, kernels and weights (Runner, or EmbeddingRunner
// for an embedding model), the tokenizer and template (TextCodec), with WebLLM's progress
// reports ({progress, timeElapsed, text}) and an AbortSignal that stops downloads and is
// checked between stages. The artifact's files come from the browser's cache when an earlier
// load kept them (artifact_files.js, weights.js).

import { ArtifactFiles } from "./artifact_files.js";
import { EmbeddingRunner } from "./embedding_runner.js";
import { withIntegrity } from "./integrity.js";
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

// What an artifact is for, by its mlcx-config.json `task`: loads its runner.
const RUNNERS = {
  generate: ({ base, kvBlocks, onStatus, shards, fetchFn, config }) =>
    Runner.load(base, kvBlocks, onStatus, shards, fetchFn, config),
  embed: ({ base, onStatus, shards, fetchFn, config }) => EmbeddingRunner.load(base, config, onStatus, shards, fetchFn),
};

// `files`: the artifact's files picked from disk (local_files.js); `artifactUrl` is then ignored.
// `integrity`: a WebLLM model record's (integrity.js). `shardsUrl`, `visionShardsUrl`: where
// the text model's and the image encoder's weight shards are when not in the artifact's
// params/ and vision/params/. -> {runner, codec, vision, task}
export async function loadModel(artifactUrl, { initProgressCallback, signal, kvBlocks = 128, shardsUrl, visionShardsUrl, files, integrity } = {}) {
  const local = files ? localArtifact(files) : null;
  const base = local?.base ?? new URL(artifactUrl, globalThis.location?.href);
  // an abort stops a download at once, not at its next progress report
  const kept = local ? null : await ArtifactFiles.open(base, (url, init) => fetch(url, { ...init, signal }));
  let library = null;
  const plain = local?.fetchFn ?? kept.fetch;
  const fetchFn = integrity ? withIntegrity(plain, base, integrity, () => library) : plain;
  const started = performance.now();
  const onStatus = (s) => {
    signal?.throwIfAborted();
    initProgressCallback?.(report(s, started));
  };
  signal?.throwIfAborted();
  // Best effort: ask the browser not to evict the weights' cache under storage pressure
  // (persist() exists in pages only, not in workers).
  await Promise.resolve(globalThis.navigator?.storage?.persist?.()).catch(() => false);
  const config = await (await fetchFn(new URL("mlcx-config.json", base))).json();
  library = config.library;
  const task = config.task ?? "generate";
  if (!Object.hasOwn(RUNNERS, task)) throw new Error(`${base}: an artifact for ${JSON.stringify(task)}, which this engine does not run`);
  const shards = shardsUrl && new URL(shardsUrl, base);
  const settled = await Promise.allSettled([
    RUNNERS[task]({ base, kvBlocks, onStatus, shards, fetchFn, config }),
    TextCodec.load(base, fetchFn),
  ]);
  if (settled[1].status === "rejected") settled[0].value?.dispose();
  const [runner, codec] = settled.map((r) => {
    if (r.status === "rejected") throw r.reason;
    return r.value;
  });
  try {
    signal?.throwIfAborted();
    // the image encoder (vision/), where the artifact has one, on the text model's device
    const visionShards = visionShardsUrl && new URL(visionShardsUrl, base);
    const vision = task === "generate" ? await VisionEncoder.load(runner, base, fetchFn, onStatus, visionShards) : null;
    await kept?.commit();
    initProgressCallback?.({ progress: 1, timeElapsed: (performance.now() - started) / 1000, text: "ready" });
    return { runner, codec, vision, task };
  } catch (err) {
    runner.dispose();
    throw err;
  }
}
