"""Evaluate one entry function of a WebGPU plan: allocate, view, launch, release.

Every step is decided on the host before anything runs: shapes come from the inputs, the
dispatches of the whole call go out in one command buffer, intermediate tensors come from and
return to the buffer pool at the plan's release points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlcx.runtime.backends.wgpu_device import BufferPool
from mlcx.runtime.backends.wgpu_expr import evaluate
from mlcx.runtime.backends.wgpu_kernels import Dispatch, KernelSet
from mlcx.targets.webgpu_plan.schema import Function, Plan, Step


@dataclass(frozen=True)
class GpuTensor:
    buffer: object
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


class _Call:
    """The state of one entry-function call."""

    def __init__(self, func: Function, inputs: dict):
        self.values: dict[int, GpuTensor] = {}
        for spec in func.inputs:
            given = inputs[spec.name]
            tensors = list(given) if spec.is_tuple else [given]
            if len(tensors) != len(spec.fields):
                raise ValueError(f"{func.name}: {spec.name} needs {len(spec.fields)} tensors")
            for field, tensor in zip(spec.fields, tensors, strict=True):
                self.values[field.value] = tensor
        self.env = {var: self.values[v].shape[d] for var, (v, d) in func.shape_vars.items()}
        for spec in func.inputs:
            for field in spec.fields:
                want = tuple(evaluate(d, self.env) for d in field.shape)
                got = self.values[field.value].shape
                if want != got:
                    raise ValueError(f"{func.name}: {spec.name} has shape {got}, not {want}")
        self.owned: set[int] = set()
        self.dispatches: list[Dispatch] = []


class PlanExecutor:
    def __init__(self, plan: Plan, kernels: KernelSet, pool: BufferPool):
        self.plan = plan
        self.kernels = kernels
        self.pool = pool

    def run(self, name: str, inputs: dict):
        """Run entry function `name`; inputs map names to GpuTensors (lists for tuples).
        Returns its outputs (same nesting); output tensors the call allocated belong to the
        caller, who hands them back with `release`."""
        func = self.plan.functions[name]
        call = _Call(func, inputs)
        for step in func.steps:
            self._step(call, step)
        self.kernels.submit(call.dispatches)
        outputs = self._outputs(call, func.outputs)
        kept = {id(t.buffer) for t in _leaves(outputs)}
        for value in call.owned:
            if id(call.values[value].buffer) not in kept:
                self.pool.release(call.values[value].buffer)
        return outputs

    def release(self, tensor: GpuTensor) -> None:
        self.pool.release(tensor.buffer)

    def _outputs(self, call: _Call, refs):
        if isinstance(refs, int):
            return call.values[refs]
        return [self._outputs(call, r) for r in refs]

    def _step(self, call: _Call, step: Step) -> None:
        if step.op == "alloc":
            shape = tuple(int(evaluate(d, call.env)) for d in step.shape)
            nbytes = math.prod(shape) * np.dtype(step.dtype).itemsize
            call.values[step.out] = GpuTensor(self.pool.acquire(nbytes), shape, step.dtype)
            call.owned.add(step.out)
        elif step.op == "view":
            src = call.values[step.src]
            shape = tuple(int(evaluate(d, call.env)) for d in step.shape)
            call.values[step.out] = GpuTensor(src.buffer, shape, step.dtype or src.dtype)
        elif step.op == "release":
            for value in step.values:
                self.pool.release(call.values[value].buffer)
                call.owned.discard(value)
        else:
            self._launch(call, step)

    def _launch(self, call: _Call, step: Step) -> None:
        tir = self.plan.tir_functions[step.func]
        args = [
            call.values[a] if isinstance(a, int) else evaluate(a["expr"], call.env)
            for a in step.args
        ]
        env = {
            var: (args[p].shape[d] if d >= 0 else args[p]) for var, (p, d) in tir.shape_vars.items()
        }
        for launch in tir.launches:
            grid = tuple(int(evaluate(g, env)) for g in launch.grid)
            if 0 in grid:
                continue
            kernel = self.plan.kernels[launch.kernel]
            scalars = tuple(
                float(evaluate(s, env)) if t == "float32" else int(evaluate(s, env))
                for s, t in zip(launch.scalars, kernel.pod_types, strict=True)
            )
            buffers = tuple(args[i].buffer for i in launch.buffers)
            call.dispatches.append(Dispatch(launch.kernel, buffers, scalars, grid))


def _leaves(tree) -> list[GpuTensor]:
    return [tree] if isinstance(tree, GpuTensor) else [x for t in tree for x in _leaves(t)]
