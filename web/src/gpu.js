// The WebGPU device, a storage-buffer pool and the plan's compute pipelines.
// Mirrors mlcx/runtime/backends/wgpu_device.py and wgpu_kernels.py: binding i = i-th buffer
// argument (writable where the kernel writes it), then one uniform with the scalar arguments
// (4 bytes each) and packGridDimX, taken from a per-batch arena by dynamic offset.

const MAX_GRID = 65535;
const RAISED_LIMITS = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxStorageBuffersPerShaderStage",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
];

export class WebGPUUnavailable extends Error {}

const NO_WEBGPU =
  "This browser has no WebGPU (navigator.gpu is missing). It needs Chrome or Edge 113+, " +
  "Safari 26 (iOS 26) or Android System WebView 121+.";

// One device per realm and feature set, shared by every model loaded there: a model's kernels
// compile once per device (KernelSet keeps them), so a second engine or a reload of the same
// artifact compiles nothing (SwiftShader takes a minute for a tiny model's kernels). Unloading a
// model frees its buffers, not the device; a lost device is forgotten and the next load opens
// a new one.
const devices = new Map(); // sorted features -> Promise<{device, name}>

export function openDevice(features) {
  const key = [...features].sort().join(",");
  if (!devices.has(key)) {
    const opened = requestDevice(features);
    devices.set(key, opened);
    const forget = () => devices.get(key) === opened && devices.delete(key);
    opened.then(({ device }) => device.lost.then(forget), forget);
  }
  return devices.get(key);
}

async function requestDevice(features) {
  const adapter = await requestAdapter();
  const missing = features.filter((f) => !adapter.features.has(f));
  if (missing.length) {
    throw new WebGPUUnavailable(
      `This model needs the WebGPU feature ${missing.join(", ")}, which this GPU ` +
        `(${adapterName(adapter)}) lacks. Compile an f32 variant instead: ` +
        "mlcx compile MODEL --target webgpu --quantization gguf (or q4f32), " +
        "without --kv-dtype float16.");
  }
  const requiredLimits = {};
  for (const name of RAISED_LIMITS) requiredLimits[name] = adapter.limits[name];
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  return { device, name: adapterName(adapter) };
}

export async function requestAdapter() {
  if (!navigator.gpu) throw new WebGPUUnavailable(NO_WEBGPU);
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) {
    throw new WebGPUUnavailable(
      "WebGPU is present but no GPU adapter is available: this GPU or its driver is not " +
        "supported by the browser (on phones: iOS 26+, or Android WebView 121+ on a Vulkan GPU).");
  }
  return adapter;
}

function adapterName(adapter) {
  const info = adapter.info || {};
  return [info.vendor, info.architecture, info.device].filter(Boolean).join(" ") || "unknown";
}

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const align = (n, a) => Math.ceil(n / a) * a;

// Bind groups kept for reuse (they hold their buffers alive); a decode step uses a few hundred.
const MAX_BIND_GROUPS = 4096;

export function sizeClass(nbytes) {
  const n = Math.max(256, nbytes);
  if (n <= 64 << 20) return 2 ** Math.ceil(Math.log2(n));
  return align(n, 1 << 20);
}

export class BufferPool {
  constructor(device) {
    this.device = device;
    this.free = new Map();
    this.buffers = 0; // created, in all size classes: bounded by the live set of one step
    this.bytes = 0;
  }

  acquire(nbytes) {
    const size = sizeClass(nbytes);
    const list = this.free.get(size);
    if (list && list.length) return list.pop();
    this.buffers += 1;
    this.bytes += size;
    return this.device.createBuffer({ size, usage: STORAGE() });
  }

  release(buffer) {
    if (!this.free.has(buffer.size)) this.free.set(buffer.size, []);
    this.free.get(buffer.size).push(buffer);
  }

  // Frees every pooled buffer (when the model using the pool is unloaded).
  destroy() {
    for (const list of this.free.values()) for (const buffer of list) buffer.destroy();
    this.free.clear();
  }
}

export function createBuffer(device, nbytes) {
  return device.createBuffer({ size: Math.max(4, align(nbytes, 4)), usage: STORAGE() });
}

export function packGrid([x, y, z]) {
  if (z !== 1) throw new Error("blockIdx.z is reserved for folding large grids");
  const packed = x;
  while (x > MAX_GRID) {
    x = Math.ceil(x / 2);
    z *= 2;
  }
  return { dims: [x, y, z], packed };
}

class Pipeline {
  constructor(device, kernel, code) {
    const entries = kernel.write_access.map((write, binding) => ({
      binding,
      visibility: GPUShaderStage.COMPUTE,
      buffer: { type: write ? "storage" : "read-only-storage" },
    }));
    entries.push({
      binding: kernel.write_access.length,
      visibility: GPUShaderStage.COMPUTE,
      buffer: { type: "uniform", hasDynamicOffset: true },
    });
    this.layout = device.createBindGroupLayout({ entries });
    this.descriptor = {
      layout: device.createPipelineLayout({ bindGroupLayouts: [this.layout] }),
      compute: { module: device.createShaderModule({ code, label: kernel.name }), entryPoint: kernel.name },
    };
    this.pipeline = null;
    this.podTypes = kernel.arg_types.filter((t) => t !== "handle");
    this.podBytes = (this.podTypes.length + 1) * 4;
  }

  async compile(device) {
    this.pipeline = await device.createComputePipelineAsync(this.descriptor);
  }

  writePods(view, offset, scalars, packed) {
    this.podTypes.forEach((type, i) => {
      if (type === "float32") view.setFloat32(offset + 4 * i, scalars[i], true);
      else if (type === "uint32") view.setUint32(offset + 4 * i, scalars[i], true);
      else view.setInt32(offset + 4 * i, scalars[i], true);
    });
    view.setUint32(offset + 4 * this.podTypes.length, packed, true);
  }
}

// device -> its compiled pipelines by kernel (name, bindings, source): Promise<Pipeline>
const pipelines = new WeakMap();
const compiledOn = (device) => pipelines.get(device) ?? pipelines.set(device, new Map()).get(device);

// The pipeline of `kernel` on `device`, compiled once per (name, bindings, source). Compiled
// off the page's thread, rather than at the first dispatch: Chromium's SwiftShader took ~25 s
// there for the tiny image encoder's kernels, ~4 s this way.
function compilePipeline(device, compiled, kernel, name, code) {
  const key = JSON.stringify([name, kernel.write_access, kernel.arg_types, code]);
  if (!compiled.has(key)) {
    const pipeline = new Pipeline(device, kernel, code);
    compiled.set(key, pipeline.compile(device).then(() => pipeline));
    compiled.get(key).catch(() => compiled.delete(key));
  }
  return compiled.get(key);
}

export class KernelSet {
  static async load(device, plan, baseUrl, onProgress, fetchFn = fetch) {
    const set = new KernelSet(device);
    const names = Object.keys(plan.kernels);
    const compiled = compiledOn(device);
    // every compile is started before any is awaited: the browser builds pipelines on its own
    // threads, so they compile side by side (one after another, a load took their sum)
    const source = async (name) =>
      (await fetchFn(new URL(plan.kernels[name].shader, baseUrl))).text();
    const sources = await Promise.all(names.map(source));
    const pending = names.map((name, i) =>
      compilePipeline(device, compiled, plan.kernels[name], name, sources[i]),
    );
    for (const [i, name] of names.entries()) {
      set.pipelines.set(name, await pending[i]);
      onProgress?.(i + 1, names.length);
    }
    return set;
  }

  constructor(device) {
    this.device = device;
    this.pipelines = new Map();
    this.align = device.limits.minUniformBufferOffsetAlignment;
    this.arena = null;
    this.groups = new Map();
    this.ids = new WeakMap();
    this.nextId = 0;
  }

  bufferId(buffer) {
    if (!this.ids.has(buffer)) this.ids.set(buffer, this.nextId++);
    return this.ids.get(buffer);
  }

  bindGroup(name, buffers) {
    const key = name + ":" + buffers.map((b) => this.bufferId(b)).join(",");
    let group = this.groups.get(key);
    if (!group) {
      const pipe = this.pipelines.get(name);
      const entries = buffers.map((buffer, binding) => ({ binding, resource: { buffer } }));
      entries.push({
        binding: buffers.length,
        resource: { buffer: this.arena, offset: 0, size: pipe.podBytes },
      });
      group = this.device.createBindGroup({ layout: pipe.layout, entries });
      if (this.groups.size >= MAX_BIND_GROUPS) this.groups.clear(); // as the Python runner does
      this.groups.set(key, group);
    }
    return group;
  }

  destroy() {
    this.arena?.destroy();
    this.arena = null;
    this.groups.clear();
  }

  ensureArena(nbytes) {
    if (!this.arena || this.arena.size < nbytes) {
      this.arena?.destroy();
      this.arena = this.device.createBuffer({
        size: Math.max(nbytes, 1 << 16) * 2,
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      });
      this.groups.clear();
    }
  }

  // dispatches: [{kernel, buffers, scalars, grid}], encoded into one compute pass.
  submit(dispatches) {
    if (!dispatches.length) return;
    const offsets = [];
    let size = 0;
    for (const d of dispatches) {
      offsets.push(size);
      size += align(this.pipelines.get(d.kernel).podBytes, this.align);
    }
    const bytes = new ArrayBuffer(size);
    const view = new DataView(bytes);
    const dims = dispatches.map((d, i) => {
      const { dims, packed } = packGrid(d.grid);
      this.pipelines.get(d.kernel).writePods(view, offsets[i], d.scalars, packed);
      return dims;
    });
    this.ensureArena(size);
    this.device.queue.writeBuffer(this.arena, 0, bytes);
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    dispatches.forEach((d, i) => {
      pass.setPipeline(this.pipelines.get(d.kernel).pipeline);
      pass.setBindGroup(0, this.bindGroup(d.kernel, d.buffers), [offsets[i]]);
      pass.dispatchWorkgroups(...dims[i]);
    });
    pass.end();
    this.device.queue.submit([encoder.finish()]);
  }
}
