// The artifact's image encoder in the page (vision/: encoder.json, a WebGPU plan of
// `embed_image`, its weights), on the text model's GPU device; mirrors
// mlcx/runtime/vision/encoder.py and runtime/core/image_inputs.py: each image's frames are
// encoded once (rows kept by the sha256 of the pixels), the prompt's runs of image tokens
// checked against them, and each image token keyed in the prefix cache by its image's content.

import { KernelSet } from "./gpu.js";
import { InvalidRequestError } from "./errors.js";
import { frameSize, imageFrames, imageLayout } from "./image_preprocess.js";
import { PlanExecutor } from "./plan.js";
import { qwenInputs } from "./qwen_inputs.js";
import { PARAMS } from "./step.js";
import { loadWeights } from "./weights.js";

const EMBED_IMAGE = "embed_image";

// encoder family -> (frame, [width, height], encoder.json) -> embed_image's named inputs
// {data, shape, dtype}, as mlcx/runtime/vision/encoder_inputs.py; other families: the pixels
const pixelInputs = (frame, [width, height]) => ({ pixels: { data: frame, shape: [3, height, width], dtype: "float32" } });
const qwen = (frame, [width, height], config) => qwenInputs(frame, height, width, config.config, config.inputs);
const INPUTS = { qwen2_5_vl: qwen, qwen3_vl: qwen };
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
    const size = p.max_pixels ? frameSize(image, p) : [p.size, p.size];
    // a dynamic-resolution frame's size is part of what it is (equal bytes, other shapes)
    const sized = p.max_pixels ? [Int32Array.from(size)] : [];
    const digest = await sha256(concat([...sized, ...frames]));
    const key = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    let rows = this.cache.get(key);
    if (!rows) {
      rows = [];
      for (const frame of frames) rows.push(await this.embed(frame, size));
      this.encoded += 1;
    }
    this.cache.delete(key);
    this.cache.set(key, rows);
    if (this.cache.size > CAPACITY) this.cache.delete(this.cache.keys().next().value);
    return { digest, rows };
  }

  // size: the frame's [width, height]
  async embed(frame, size) {
    const { device, pool } = this.runner;
    const named = (INPUTS[this.config.family] ?? pixelInputs)(frame, size, this.config);
    const inputs = {};
    for (const [name, { data, shape, dtype }] of Object.entries(named)) {
      const buffer = pool.acquire(data.byteLength);
      if (data.length) device.queue.writeBuffer(buffer, 0, data);
      inputs[name] = { buffer, shape, dtype };
    }
    const rows = this.executor.run(EMBED_IMAGE, { ...inputs, [PARAMS]: this.params });
    const out = await this.runner.read(rows);
    for (const t of [...Object.values(inputs), rows]) pool.release(t.buffer);
    return out;
  }

  layout(image) {
    return imageLayout(this.config, image);
  }

  // The prompt text with each image marker the template wrote replaced by its image's text.
  promptText(text, images) {
    const marker = this.config.image_marker;
    const pieces = text.split(marker);
    if (pieces.length - 1 !== images.length) {
      throw new InvalidRequestError(`the chat template wrote ${pieces.length - 1} image marker(s) ${marker} for ${images.length} image(s)`, "messages");
    }
    return pieces[0] + images.map((im, i) => this.layout(im).text + pieces[i + 1]).join("");
  }

  // [start, end) of each run of image tokens in the prompt, checked against the images' frames.
  runs(promptIds, images) {
    const runs = imageRuns(promptIds, this.config.image_token_id);
    const wanted = images.flatMap((im) => this.layout(im).runs);
    if (runs.length !== wanted.length || runs.some(([s, e], i) => e - s !== wanted[i])) {
      throw new InvalidRequestError(`${images.length} image(s) need runs of [${wanted}] image tokens in the prompt, which has [${runs.map(([s, e]) => e - s)}]`, "messages");
    }
    const n = Math.max(...wanted), chunk = this.runner.config.prefill_chunk;
    if (n > chunk) {
      throw new InvalidRequestError(`an image's ${n} tokens exceed a step's ${chunk}; recompile with a larger --prefill-chunk`, "messages");
    }
    return runs;
  }

  // Each image encoded (or found by its content), then one {start, end, rows, cacheId, grid}
  // per run of image tokens (a frame each; grid: its merged tokens, for M-RoPE, or null).
  async promptImages(runs, images) {
    const out = [];
    for (const image of images) {
      const e = await this.encode(image);
      const { grid } = this.layout(image);
      for (const [k, rows] of e.rows.entries()) {
        const [start, end] = runs[out.length];
        out.push({ start, end, rows, cacheId: await cacheId(e.digest, k), grid });
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
