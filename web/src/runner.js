// Runs the plan's entry functions for one forward step; mirrors
// mlcx/runtime/backends/wgpu_runner.py: weights and one KV page buffer per layer stay on the
// GPU, the page-table arrays go up, only the logits come back.

import { BufferPool, KernelSet, createBuffer, openDevice } from "./gpu.js";
import { PlanExecutor, tensorBytes } from "./plan.js";
import { COPY_STATES, CHECKPOINTS, STATES, hasStates, stateTensors } from "./state_cache.js";
import { KV_PAGES, PARAMS, ROPE_POSITIONS, kvPagesTensors, stepCall } from "./step.js";
import { loadWeights } from "./weights.js";

export class Runner {
  // numBlocks: KV pages, or a function (plan, config) -> pages; shardsUrl: where the weight
  // shards are when not next to the plan (an app's bundle); fetchFn: how files are read
  // (local_files.js serves a user-picked folder).
  // config: mlcx-config.json when the caller has read it already. The device is the realm's
  // shared one (gpu.js openDevice): a load that fails leaves its buffers to the garbage
  // collector, `dispose` frees a loaded model's.
  static async load(baseUrl, numBlocks, onStatus, shardsUrl = undefined, fetchFn = fetch, config = null) {
    config ??= await (await fetchFn(new URL("mlcx-config.json", baseUrl))).json();
    const plan = await (await fetchFn(new URL(config.library, baseUrl))).json();
    if (typeof numBlocks === "function") numBlocks = numBlocks(plan, config);
    const { device, name } = await openDevice(plan.features);
    onStatus?.({ stage: "kernels", adapter: name });
    const kernels = await KernelSet.load(device, plan, baseUrl, (i, n) =>
      onStatus?.({ stage: "kernels", done: i, total: n }), fetchFn);
    const { tensors, cached } = await loadWeights(device, baseUrl, (done, total, hit) =>
      onStatus?.({ stage: "weights", done, total, cached: hit }), shardsUrl, fetchFn);
    return new Runner({ config, plan, device, kernels, params: tensors, numBlocks, adapter: name, cached });
  }

  constructor({ config, plan, device, kernels, params, numBlocks, adapter, cached }) {
    Object.assign(this, { config, plan, device, kernels, params, numBlocks, adapter, weightsCached: cached });
    this.pool = new BufferPool(device);
    this.executor = new PlanExecutor(plan, kernels, this.pool);
    this.staging = [];
    const allocate = (t) => ({ ...t, buffer: createBuffer(device, tensorBytes(t)) });
    this.kvPages = kvPagesTensors(plan, numBlocks).map(allocate);
    // a hybrid model's state tensors: the running sequence's slot and the checkpoints'
    this.states = hasStates(plan) ? stateTensors(plan, 1 + CHECKPOINTS).map(allocate) : [];
  }

  // Copies state slot rows [[src, dst], ...], in order (checkpoint saves and restores).
  copyStates(pairs) {
    if (!pairs.length) return;
    const tensor = this.i32(pairs.flat());
    tensor.shape = [pairs.length, 2];
    this.executor.run(COPY_STATES, { [STATES]: this.states, pairs: tensor });
    this.pool.release(tensor.buffer);
  }

  // Frees this model's GPU memory (weights, KV pages, pooled and staging buffers); the shared
  // device stays for other models.
  dispose() {
    for (const t of [...this.params, ...this.kvPages]) t.buffer.destroy();
    for (const b of this.staging) b.destroy();
    this.pool.destroy();
    this.kernels.destroy();
  }

  i32(values) {
    const data = Int32Array.from(values);
    const buffer = this.pool.acquire(data.byteLength);
    if (data.length) this.device.queue.writeBuffer(buffer, 0, data);
    return { buffer, shape: [data.length], dtype: "int32" };
  }

  // A step array on the GPU: int32, but image_embeds (Float32Array, [tokens, hidden]).
  upload(values) {
    if (!(values instanceof Float32Array)) return this.i32(values);
    const buffer = this.pool.acquire(values.byteLength);
    this.device.queue.writeBuffer(buffer, 0, values);
    const hidden = this.config.model.hidden_size;
    return { buffer, shape: [values.length / hidden, hidden], dtype: "float32" };
  }

  copyPages(copies) {
    if (!copies.length) return;
    const pairs = this.i32(copies.flat());
    pairs.shape = [copies.length, 2];
    this.executor.run("copy_pages", { [KV_PAGES]: this.kvPages, pairs });
    this.pool.release(pairs.buffer);
  }

  // ids: Int32Array of new tokens; tables: KVCacheManager.buildArrays(...); rows: logit rows
  // (null: each sequence's last token, through the decode function when one token each);
  // image: the step's image rows and embeddings (step.js stepCall); stateSlots: each
  // sequence's state slot (a hybrid model); ropePositions: an M-RoPE model's [3 x tokens].
  async forward(ids, tables, copies = [], rows = null, image = null, stateSlots = null, ropePositions = null) {
    this.copyPages(copies);
    const { name, arrays } = stepCall(this.plan, ids, tables, rows, image, stateSlots, ropePositions);
    const inputs = Object.fromEntries(Object.entries(arrays).map(([k, a]) => [k, this.upload(a)]));
    if (inputs[ROPE_POSITIONS]) inputs[ROPE_POSITIONS].shape = [3, ids.length];
    const transient = Object.values(inputs);
    inputs[KV_PAGES] = this.kvPages;
    if (this.states.length) inputs[STATES] = this.states;
    inputs[PARAMS] = this.params;
    const [logits] = this.executor.run(name, inputs);
    const out = await this.read(logits);
    for (const t of [logits, ...transient]) this.pool.release(t.buffer);
    return { data: out, rows: logits.shape[0], vocab: logits.shape[1] };
  }

  // Staging buffers are kept for the next step (a step reads the same logits size again).
  async read(tensor) {
    const nbytes = tensorBytes(tensor);
    const staging = this.takeStaging(nbytes);
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(tensor.buffer, 0, staging, 0, nbytes);
    this.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ, 0, nbytes);
    const out = new Float32Array(staging.getMappedRange(0, nbytes).slice(0));
    staging.unmap();
    this.staging.push(staging);
    return out;
  }

  takeStaging(nbytes) {
    const i = this.staging.findIndex((b) => b.size >= nbytes);
    if (i >= 0) return this.staging.splice(i, 1)[0];
    const usage = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
    return this.device.createBuffer({ size: Math.max(256, nbytes), usage });
  }
}
