// Runs an embedding artifact's `embed` plan (mlcx/frontends/nn/embedding_model.py; compiled
// with --target webgpu) in the page, as mlcx/runtime/backends/wgpu_embed.py runs it natively:
// weights stay on the GPU, each batch's padded arrays go up, the pooled vectors come back.

import { BufferPool, KernelSet, openDevice } from "./gpu.js";
import { PlanExecutor, tensorBytes } from "./plan.js";
import { PARAMS } from "./step.js";
import { loadWeights } from "./weights.js";

export const EMBED = "embed";
export const EMBED_INPUTS = ["input_ids", "positions", "rows", "mask", "pool"];

function checkPlan(plan) {
  const got = plan.functions[EMBED]?.inputs.map((i) => i.name) ?? [];
  if (got.join() !== [...EMBED_INPUTS, PARAMS].join()) {
    throw new Error(`the plan's ${EMBED} takes (${got}), not (${EMBED_INPUTS}, weights): recompile the model with the mlcx that serves this page`);
  }
}

export class EmbeddingRunner {
  static async load(baseUrl, config, onStatus, shardsUrl = undefined, fetchFn = fetch) {
    const plan = await (await fetchFn(new URL(config.library, baseUrl))).json();
    checkPlan(plan);
    const { device, name } = await openDevice(plan.features); // the realm's shared one
    onStatus?.({ stage: "kernels", adapter: name });
    const kernels = await KernelSet.load(device, plan, baseUrl, (i, n) =>
      onStatus?.({ stage: "kernels", done: i, total: n }), fetchFn);
    const { tensors, cached } = await loadWeights(device, baseUrl, (done, total, hit) =>
      onStatus?.({ stage: "weights", done, total, cached: hit }), shardsUrl, fetchFn);
    return new EmbeddingRunner({ config, plan, device, kernels, params: tensors, adapter: name, cached });
  }

  constructor({ config, plan, device, kernels, params, adapter, cached }) {
    Object.assign(this, { config, plan, device, kernels, params, adapter, weightsCached: cached });
    this.pool = new BufferPool(device);
    this.executor = new PlanExecutor(plan, kernels, this.pool);
  }

  // Frees this model's buffers; the shared device stays.
  dispose() {
    for (const t of this.params) t.buffer.destroy();
    this.pool.destroy();
    this.kernels.destroy();
  }

  upload(array, shape) {
    const buffer = this.pool.acquire(array.byteLength);
    this.device.queue.writeBuffer(buffer, 0, array);
    return { buffer, shape, dtype: array instanceof Float32Array ? "float32" : "int32" };
  }

  // batch: embedding_batch.js's arrays; -> Float32Array [texts * hidden], pooled, not normalized.
  async run({ texts, seq, arrays }) {
    const shapes = { mask: [texts, seq], pool: [texts, seq] };
    const inputs = Object.fromEntries(EMBED_INPUTS.map((k) => [k, this.upload(arrays[k], shapes[k] ?? [texts * seq])]));
    const [pooled] = [this.executor.run(EMBED, { ...inputs, [PARAMS]: this.params })].flat();
    const out = await this.read(pooled);
    for (const t of [pooled, ...Object.values(inputs)]) this.pool.release(t.buffer);
    return out;
  }

  async read(tensor) {
    const nbytes = tensorBytes(tensor);
    const staging = this.device.createBuffer({ size: Math.max(256, nbytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(tensor.buffer, 0, staging, 0, nbytes);
    this.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ, 0, nbytes);
    const out = new Float32Array(staging.getMappedRange(0, nbytes).slice(0));
    staging.destroy();
    return out;
  }
}
