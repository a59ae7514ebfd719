"""Run one TIR PrimFunc on this machine's wgpu adapter through the WebGPU plan machinery (the
same lowering, shaders, launch table and executor an artifact uses), for kernel tests."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import tvm
from tvm import tirx

from mlcx.runtime.backends.wgpu_device import BufferPool, GpuDevice
from mlcx.runtime.backends.wgpu_executor import GpuTensor, PlanExecutor
from mlcx.runtime.backends.wgpu_kernels import KernelSet
from mlcx.targets.webgpu_plan.build import _features, _kernels, _lower_tir
from mlcx.targets.webgpu_plan.host_launches import tir_function
from mlcx.targets.webgpu_plan.schema import Plan
from mlcx.targets.webgpu_plan.shaders import kernel_sources
from tests.support.kernel_cache import cached

TARGET = {"kind": "webgpu", "supports_subgroups": True}


class _Call:
    def __init__(self, values: dict[int, GpuTensor]):
        self.values = values
        self.env: dict = {}
        self.dispatches: list = []


def wgsl_sources(func: tirx.PrimFunc, target: dict | None = None) -> dict[str, str]:
    """The WGSL of each kernel `func` lowers to, as an artifact's shaders/ holds it."""
    name = str(func.attrs["global_symbol"])
    tvm_target = tvm.target.Target(target or TARGET, host={"kind": "llvm"})
    graph = tvm.IRModule({name: func.with_attr("global_symbol", name)})
    with tvm_target:
        _, device = _lower_tir(graph, {name}, tvm_target, keep_f16=False)
    return {k: s.wgsl for k, s in kernel_sources(device).items()}


def run_prim_func(
    func: tirx.PrimFunc, arrays: list[np.ndarray], target: dict | None = None
) -> list[np.ndarray]:
    """Call `func` with `arrays` (one per buffer parameter, outputs included); returns every
    array as the kernel left it. The lowering and the shader pipelines are made once per
    kernel and target in a session (tests.support.kernel_cache)."""
    name = str(func.attrs["global_symbol"])
    gpu, executor = cached(func, f"wgpu {target or TARGET}", lambda: _prepare(func, name, target))
    tensors = {
        i: GpuTensor(gpu.upload(a), tuple(a.shape), str(a.dtype)) for i, a in enumerate(arrays)
    }
    call = _Call(tensors)
    executor._launch(call, _CallStep(name, len(arrays)))
    executor.kernels.submit(call.dispatches)
    return [
        gpu.download(t.buffer, a.nbytes).view(a.dtype).reshape(a.shape)
        for t, a in zip(tensors.values(), arrays, strict=True)
    ]


def _prepare(func: tirx.PrimFunc, name: str, target: dict | None):
    """(the device, an executor holding `func`'s compiled shaders) for a one-kernel plan."""
    tvm_target = tvm.target.Target(target or TARGET, host={"kind": "llvm"})
    graph = tvm.IRModule({name: func.with_attr("global_symbol", name)})
    with tvm_target:
        host, device = _lower_tir(graph, {name}, tvm_target, keep_f16=False)
    sources = kernel_sources(device)
    counts = {k: s.num_buffers for k, s in sources.items()}
    tir, blocks = tir_function(host[name], name, counts)
    kernels = _kernels(sources, blocks)
    plan = Plan("float32", _features("float32", device, sources), kernels, {name: tir}, {})
    with tempfile.TemporaryDirectory() as root:
        for k in kernels.values():
            path = Path(root) / k.shader
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(sources[k.name].wgsl)
        gpu = _device(plan.features)
        return gpu, PlanExecutor(plan, KernelSet(gpu, plan, Path(root)), BufferPool(gpu))


@functools.cache
def _device(features: tuple[str, ...]) -> GpuDevice:
    """One device per feature set for the session (opening one per kernel costs ~1 s)."""
    return GpuDevice.open(features)


class _CallStep:
    def __init__(self, func: str, count: int):
        self.func = func
        self.args = tuple(range(count))
