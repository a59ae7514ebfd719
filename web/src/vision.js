// The artifact's image encoder in the page (vision/: encoder.json, a WebGPU plan of
// `embed_image`, its weights), on the text model's GPU device; mirrors
// mlcx/runtime/vision/encoder.py and runtime/core/image_inputs.py: each image's frames are
// encoded once (rows kept by the sha256 of the pixels), the prompt's runs of image tokens
// checked against them, and each image token keyed in the prefix cache by its image's content.

import { KernelSet } from "./gpu.js";
import { InvalidRequestError } from "./errors.js";
import { framesOf, imageFrames, imageGrid, imageText } from "./image_preprocess.js";
import { PlanExecutor } from "./plan.js";
import { PARAMS } from "./step.js";
import { loadWeights } from "./weights.js";

const EMBED_IMAGE = "embed_image";
const CAPACITY = 16; // images whose rows are kept, as Python's ImageEncoder

const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));

function concat(arrays) {
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.byteLength, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at += a.byteLength;
  }
  return out;
}

export class VisionEncoder {
  // null where the artifact has no image encoder; onStatus gets {stage: "vision", done, total}
  // (weight bytes) as the loader's other stages do. shardsUrl: where the encoder's weight
  // shards are when not in vision/params/ (an app's bundle/ folder or a download URL).
  static async load(runner, baseUrl, fetchFn = fetch, onStatus = undefined, shardsUrl = undefined) {
    const base = new URL("vision/", baseUrl);
    const found = await fetchFn(new URL("encoder.json", base));
    if (!found.ok) return null;
    const config = await found.json();
    if (config.device !== "webgpu") {
      throw new Error(`the image encoder was compiled for ${config.device}; compile the model with --target webgpu`);
    }
    const plan = await (await fetchFn(new URL(config.library, base))).json();
    const missing = plan.features.filter((f) => !runner.device.features.has(f));
    if (missing.length) throw new Error(`the image encoder needs WebGPU feature(s) ${missing}, which the device lacks`);
    const kernels = await KernelSet.load(runner.device, plan, base, undefined, fetchFn);
    const progress = (done, total) => onStatus?.({ stage: "vision", done, total });
    const { tensors } = await loadWeights(runner.device, base, progress, shardsUrl, fetchFn);
    return new VisionEncoder(config, new PlanExecutor(plan, kernels, runner.pool), tensors, runner);
  }

  constructor(config, executor, params, runner) {
    Object.assign(this, { config, executor, params, runner });
    this.cache = new Map(); // hex digest -> rows (insertion order: least recently used first)
    this.encoded = 0; // images run through the encoder (cache misses)
  }

  // Frees the encoder's weights with its model (the device and pool are the model's).
  dispose() {
    for (const t of this.params) t.buffer.destroy();
    this.executor.kernels.destroy();
  }

  // image: {width, height, rgb} -> {digest, rows: [Float32Array per frame]}
  async encode(image) {
    const p = this.config.preprocess;
    const frames = imageFrames(image, p);
    const digest = await sha256(concat(frames));
    const key = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    let rows = this.cache.get(key);
    if (!rows) {
      rows = [];
      for (const frame of frames) rows.push(await this.embed(frame));
      this.encoded += 1;
    }
    this.cache.delete(key);
    this.cache.set(key, rows);
    if (this.cache.size > CAPACITY) this.cache.delete(this.cache.keys().next().value);
    return { digest, rows };
  }

  async embed(frame) {
    const { device, pool } = this.runner;
    const buffer = pool.acquire(frame.byteLength);
    device.queue.writeBuffer(buffer, 0, frame);
    const S = this.config.preprocess.size;
    const pixels = { buffer, shape: [3, S, S], dtype: "float32" };
    const rows = this.executor.run(EMBED_IMAGE, { pixels, [PARAMS]: this.params });
    const out = await this.runner.read(rows);
    for (const t of [pixels, rows]) pool.release(t.buffer);
    return out;
  }

  grid(image) {
    return imageGrid(image, this.config.preprocess);
  }

  // The prompt text with each image marker the template wrote replaced by its image's text.
  promptText(text, images) {
    const marker = this.config.image_marker;
    const pieces = text.split(marker);
    if (pieces.length - 1 !== images.length) {
      throw new InvalidRequestError(`the chat template wrote ${pieces.length - 1} image marker(s) ${marker} for ${images.length} image(s)`, "messages");
    }
    return pieces[0] + images.map((im, i) => imageText(this.config, this.grid(im)) + pieces[i + 1]).join("");
  }

  // [start, end) of each run of image tokens in the prompt, checked against the images' frames.
  runs(promptIds, images) {
    const { image_token_id: token, tokens_per_image: n } = this.config;
    const runs = imageRuns(promptIds, token);
    const wanted = images.reduce((s, im) => s + framesOf(this.grid(im)), 0);
    if (runs.length !== wanted || runs.some(([s, e]) => e - s !== n)) {
      throw new InvalidRequestError(`${images.length} image(s) need ${wanted} run(s) of ${n} image tokens in the prompt, which has ${runs.length}`, "messages");
    }
    if (n > this.runner.config.prefill_chunk) {
      throw new InvalidRequestError(`an image's ${n} tokens exceed a step's ${this.runner.config.prefill_chunk}; recompile with a larger --prefill-chunk`, "messages");
    }
    return runs;
  }

  // Each image encoded (or found by its content), then one {start, end, rows, cacheId} per
  // run of image tokens (a frame each).
  async promptImages(runs, images) {
    const out = [];
    for (const image of images) {
      const e = await this.encode(image);
      for (const [k, rows] of e.rows.entries()) {
        const [start, end] = runs[out.length];
        out.push({ start, end, rows, cacheId: await cacheId(e.digest, k) });
      }
    }
    return out;
  }
}

function imageRuns(ids, token) {
  const runs = [];
  ids.forEach((id, i) => {
    if (id !== token) return;
    if (runs.length && runs.at(-1)[1] === i) runs.at(-1)[1] = i + 1;
    else runs.push([i, i + 1]);
  });
  return runs;
}

// What the prefix cache hashes in place of a frame's image tokens: negative (never a token id),
// from the sha256 of the image digest and the frame's index, as Python's PromptImage.cache_id.
async function cacheId(digest, frame) {
  const d = await sha256(concat([digest, Uint8Array.of(frame)]));
  return -1 - (((d[0] << 23) | (d[1] << 15) | (d[2] << 7) | (d[3] >> 1)) >>> 0);
}
