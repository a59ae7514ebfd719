// Evaluate one entry function of a WebGPU plan; mirrors mlcx/runtime/backends/wgpu_executor.py.
// Steps: alloc (out, shape, dtype), view (out, src, shape, dtype: the same buffer), call (func, args), release (values).
// All dispatches of a call go out in one command buffer.

import { evaluate } from "./expr.js";

const ITEM_SIZE = { float32: 4, float16: 2, int32: 4, uint32: 4, int8: 1, uint8: 1 };

export const itemSize = (dtype) => {
  if (!(dtype in ITEM_SIZE)) throw new Error(`unsupported dtype ${dtype}`);
  return ITEM_SIZE[dtype];
};

export const tensorBytes = (t) => t.shape.reduce((a, b) => a * b, 1) * itemSize(t.dtype);

export class PlanExecutor {
  constructor(plan, kernels, pool) {
    this.plan = plan;
    this.kernels = kernels;
    this.pool = pool;
  }

  // inputs: {name: tensor | [tensors]}, a tensor being {buffer, shape, dtype}. Returns the
  // outputs with the plan's nesting; allocated outputs go back with pool.release(t.buffer).
  run(name, inputs) {
    const func = this.plan.functions[name];
    const call = { values: new Map(), owned: new Set(), dispatches: [], env: {} };
    for (const spec of func.inputs) {
      const tensors = spec.is_tuple ? inputs[spec.name] : [inputs[spec.name]];
      if (tensors.length !== spec.fields.length) throw new Error(`${name}: ${spec.name} arity`);
      spec.fields.forEach((field, i) => call.values.set(field.value, tensors[i]));
    }
    for (const [v, [value, dim]] of Object.entries(func.shape_vars)) {
      call.env[v] = call.values.get(value).shape[dim];
    }
    for (const step of func.steps) this.step(call, step);
    this.kernels.submit(call.dispatches);
    const outputs = this.collect(call, func.outputs);
    const kept = new Set(leaves(outputs).map((t) => t.buffer));
    for (const value of call.owned) {
      const buffer = call.values.get(value).buffer;
      if (!kept.has(buffer)) this.pool.release(buffer);
    }
    return outputs;
  }

  collect(call, refs) {
    return typeof refs === "number" ? call.values.get(refs) : refs.map((r) => this.collect(call, r));
  }

  step(call, step) {
    const shape = () => step.shape.map((d) => evaluate(d, call.env));
    if (step.op === "alloc") {
      const tensor = { shape: shape(), dtype: step.dtype };
      tensor.buffer = this.pool.acquire(tensorBytes(tensor));
      call.values.set(step.out, tensor);
      call.owned.add(step.out);
    } else if (step.op === "view") {
      const src = call.values.get(step.src);
      call.values.set(step.out, { buffer: src.buffer, shape: shape(), dtype: step.dtype || src.dtype });
    } else if (step.op === "release") {
      for (const value of step.values) {
        this.pool.release(call.values.get(value).buffer);
        call.owned.delete(value);
      }
    } else {
      this.launch(call, step);
    }
  }

  launch(call, step) {
    const tir = this.plan.tir_functions[step.func];
    const args = step.args.map((a) => (typeof a === "number" ? call.values.get(a) : evaluate(a.expr, call.env)));
    const env = {};
    for (const [v, [param, dim]] of Object.entries(tir.shape_vars)) {
      env[v] = dim >= 0 ? args[param].shape[dim] : args[param];
    }
    for (const launch of tir.launches) {
      const grid = launch.grid.map((g) => evaluate(g, env));
      if (grid.includes(0)) continue;
      call.dispatches.push({
        kernel: launch.kernel,
        buffers: launch.buffers.map((i) => args[i].buffer),
        scalars: launch.scalars.map((s) => evaluate(s, env)),
        grid,
      });
    }
  }
}

function leaves(tree) {
  return Array.isArray(tree) ? tree.flatMap(leaves) : [tree];
}
