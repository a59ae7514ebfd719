// Runs the plan's entry functions for one forward step; mirrors
// mlcx/runtime/backends/wgpu_runner.py: weights and one KV page buffer per layer stay on the
// GPU, the page-table arrays go up, only the logits come back.

import { BufferPool, KernelSet, createBuffer, openDevice } from "./gpu.js";
import { PlanExecutor, itemSize, tensorBytes } from "./plan.js";
import { loadWeights } from "./weights.js";

const STEP_INPUTS = ["positions", "slots", "q_indptr", "page_indptr", "page_values", "last_page_len"];

export class Runner {
  static async load(baseUrl, numBlocks, onStatus) {
    const config = await (await fetch(new URL("mlcx-config.json", baseUrl))).json();
    const plan = await (await fetch(new URL(config.library, baseUrl))).json();
    const { device, name } = await openDevice(plan.features);
    onStatus?.({ stage: "kernels", adapter: name });
    const kernels = await KernelSet.load(device, plan, baseUrl, (i, n) =>
      onStatus?.({ stage: "kernels", done: i, total: n }));
    const { tensors, cached } = await loadWeights(device, baseUrl, (done, total, hit) =>
      onStatus?.({ stage: "weights", done, total, cached: hit }));
    return new Runner({ config, plan, device, kernels, params: tensors, numBlocks, adapter: name, cached });
  }

  constructor({ config, plan, device, kernels, params, numBlocks, adapter, cached }) {
    Object.assign(this, { config, plan, device, params, numBlocks, adapter, weightsCached: cached });
    this.pool = new BufferPool(device);
    this.executor = new PlanExecutor(plan, kernels, this.pool);
    const m = config.model;
    const shape = [numBlocks, 2, m.num_kv_heads, config.page_size, m.head_dim];
    const dtype = config.activation_dtype;
    this.kvPages = Array.from({ length: m.num_layers }, () => ({
      shape, dtype, buffer: createBuffer(device, shape.reduce((a, b) => a * b, 1) * itemSize(dtype)),
    }));
  }

  i32(values) {
    const data = Int32Array.from(values);
    const buffer = this.pool.acquire(data.byteLength);
    if (data.length) this.device.queue.writeBuffer(buffer, 0, data);
    return { buffer, shape: [data.length], dtype: "int32" };
  }

  copyPages(copies) {
    if (!copies.length) return;
    const pairs = this.i32(copies.flat());
    pairs.shape = [copies.length, 2];
    this.executor.run("copy_pages", { kv_pages: this.kvPages, pairs });
    this.pool.release(pairs.buffer);
  }

  // ids: Int32Array of new tokens; tables: KVCacheManager.buildArrays(...); rows: logit rows
  // (null: each sequence's last token, through the decode function when one token each).
  async forward(ids, tables, copies = [], rows = null) {
    this.copyPages(copies);
    const inputs = { input_ids: this.i32(ids) };
    for (const name of STEP_INPUTS) inputs[name] = this.i32(tables[name]);
    const batch = tables.last_page_len.length;
    let name = "decode";
    if (rows !== null || ids.length !== batch) {
      name = "prefill";
      inputs.logit_positions = this.i32(rows ?? Array.from(tables.q_indptr.slice(1), (x) => x - 1));
    }
    const transient = Object.values(inputs);
    inputs.kv_pages = this.kvPages;
    inputs.packed_params = this.params;
    const [logits] = this.executor.run(name, inputs);
    const out = await this.read(logits);
    for (const t of [logits, ...transient]) this.pool.release(t.buffer);
    return { data: out, rows: logits.shape[0], vocab: logits.shape[1] };
  }

  async read(tensor) {
    const nbytes = tensorBytes(tensor);
    const staging = this.device.createBuffer({ size: nbytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(tensor.buffer, 0, staging, 0, nbytes);
    this.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(staging.getMappedRange().slice(0));
    staging.destroy();
    return out;
  }
}
