"""Run one TIR PrimFunc on this machine's wgpu adapter through the WebGPU plan machinery (the
same lowering, shaders, launch table and executor an artifact uses), for kernel tests."""

from __future__ import annotations

import functools
import json
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
from tests.support.kernel_cache import cached, on_disk

TARGET = {"kind": "webgpu", "supports_subgroups": True}


class _Call:
    def __init__(self, values: dict[int, GpuTensor]):
        self.values = values
        self.env: dict = {}
        self.dispatches: list = []


def wgsl_sources(func: tirx.PrimFunc, target: dict | None = None) -> dict[str, str]:
    """The WGSL of each kernel `func` lowers to, as an artifact's shaders/ holds it."""
    return json.loads(_lowered(func, target).read_text())["wgsl"]


def run_prim_func(
    func: tirx.PrimFunc, arrays: list[np.ndarray], target: dict | None = None
) -> list[np.ndarray]:
    """Call `func` with `arrays` (one per buffer parameter, outputs included); returns every
    array as the kernel left it. The shader pipelines are made once per kernel and target in
    a session; the lowering is kept on disk (tests.support.kernel_cache)."""
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


def _lowered(func: tirx.PrimFunc, target: dict | None) -> Path:
    """`func`'s one-kernel plan and shaders as JSON ({"plan", "shaders": {file: WGSL},
    "wgsl": {kernel: WGSL}}), lowered once per machine (tests.support.kernel_cache)."""
    target = target or TARGET
    return on_disk(func, f"wgpu {target}", ".json", lambda p: p.write_text(_lower(func, target)))


def _lower(func: tirx.PrimFunc, target: dict) -> str:
    name = str(func.attrs["global_symbol"])
    tvm_target = tvm.target.Target(target, host={"kind": "llvm"})
    graph = tvm.IRModule({name: func.with_attr("global_symbol", name)})
    with tvm_target:
        host, device = _lower_tir(graph, {name}, tvm_target, keep_f16=False)
    sources = kernel_sources(device)
    counts = {k: s.num_buffers for k, s in sources.items()}
    tir, blocks = tir_function(host[name], name, counts)
    kernels = _kernels(sources, blocks)
    plan = Plan("float32", _features("float32", device, sources), kernels, {name: tir}, {})
    shaders = {k.shader: sources[k.name].wgsl for k in kernels.values()}
    wgsl = {k: s.wgsl for k, s in sources.items()}
    return json.dumps({"plan": plan.to_json(), "shaders": shaders, "wgsl": wgsl})


def _prepare(func: tirx.PrimFunc, name: str, target: dict | None):
    """(the device, an executor holding `func`'s compiled shaders) for a one-kernel plan."""
    lowered = json.loads(_lowered(func, target).read_text())
    plan = Plan.from_json(lowered["plan"])
    with tempfile.TemporaryDirectory() as root:
        for shader, wgsl in lowered["shaders"].items():
            path = Path(root) / shader
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(wgsl)
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
