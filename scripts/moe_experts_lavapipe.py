"""Time one mixture-of-experts gate/up projection on this machine's wgpu adapter (lavapipe
here): the grouped GEMM over rows sorted by expert against the gathered GEMV, same weights,
same routing (uniform random), Q4_0 weights, f32 activations. Kernel time only (best of 5).

    PYTHONPATH=$PWD python scripts/moe_experts_lavapipe.py --experts 64 --top-k 8 \
        --hidden 512 --width 256 --tokens 128

lavapipe is a CPU: these are not GPU timings (it is bound by arithmetic, a GPU by bandwidth).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import tvm

import mlcx.kernels.gpu.experts as ex
from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.expert_sort import build_expert_sort, sort_shapes
from mlcx.quantization.formats import GroupIntFormat
from mlcx.runtime.backends.wgpu_device import BufferPool, GpuDevice
from mlcx.runtime.backends.wgpu_executor import GpuTensor, PlanExecutor
from mlcx.runtime.backends.wgpu_kernels import KernelSet
from mlcx.targets.webgpu_plan.build import _features, _kernels, _lower_tir
from mlcx.targets.webgpu_plan.host_launches import tir_function
from mlcx.targets.webgpu_plan.schema import Plan
from mlcx.targets.webgpu_plan.shaders import kernel_sources
from tests.support.wgpu_prim import TARGET, _Call, _CallStep


def executor_for(funcs, root: Path):
    target = tvm.target.Target(TARGET, host={"kind": "llvm"})
    graph = tvm.IRModule({str(f.attrs["global_symbol"]): f for f in funcs})
    names = {gv.name_hint for gv in graph.get_global_vars()}
    with target:
        host, device = _lower_tir(graph, names, target, False)
    sources = kernel_sources(device)
    counts = {k: s.num_buffers for k, s in sources.items()}
    tirs, blocks = {}, {}
    for name in names:
        tirs[name], found = tir_function(host[name], name, counts)
        blocks.update(found)
    kernels = _kernels(sources, blocks)
    plan = Plan("float32", _features("float32", device, sources), kernels, tirs, {})
    for k in kernels.values():
        (root / k.shader).parent.mkdir(parents=True, exist_ok=True)
        (root / k.shader).write_text(sources[k.name].wgsl)
    gpu = GpuDevice.open(plan.features)
    return gpu, PlanExecutor(plan, KernelSet(gpu, plan, root), BufferPool(gpu))


def best_time(gpu, executor, name: str, tensors: dict, reps: int = 5) -> float:
    times = []
    for _ in range(reps + 1):
        call = _Call(tensors)
        executor._launch(call, _CallStep(name, len(tensors)))
        start = time.perf_counter()
        executor.kernels.submit(call.dispatches)
        gpu.download(tensors[len(tensors) - 1].buffer, 4)  # waits for the queue
        times.append(time.perf_counter() - start)
    return min(times[1:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("experts", 64), ("top-k", 8), ("hidden", 512), ("width", 256)):
        p.add_argument(f"--{flag}", type=int, default=default)
    p.add_argument("--tokens", type=int, default=128)
    a = p.parse_args()
    fmt, cfg, rng = GroupIntFormat(4, 32, "float16"), GpuConfig(), np.random.default_rng(0)
    spec = ex.GpuExpertsSpec(fmt, a.experts, a.top_k, a.hidden, 2 * a.width, "float32", fused=True)
    params = fmt.pack(rng.standard_normal((spec.weight_rows, a.hidden)).astype(np.float32))
    ids = np.stack([rng.choice(a.experts, a.top_k, replace=False) for _ in range(a.tokens)])
    ids = ids.astype(np.int32)
    x = rng.standard_normal((a.tokens, a.hidden)).astype(np.float32)
    sort, grouped = build_expert_sort(spec.sort_spec(cfg)), ex.build_gpu_experts(spec, cfg)
    ex.gemv_max_pairs = lambda _spec: 1 << 30  # the same projection, always gathered
    gathered = ex.build_gpu_experts(spec, cfg).with_attr("global_symbol", spec.name + "_gemv")
    with tempfile.TemporaryDirectory() as root:
        gpu, executor = executor_for([sort, grouped, gathered], Path(root))

        def up(arr):
            return GpuTensor(gpu.upload(arr), tuple(arr.shape), str(arr.dtype))

        scratch = [np.zeros(s, np.int32) for s in sort_shapes(a.tokens, spec.sort_spec(cfg))]
        sorted_ = dict(enumerate(up(t) for t in [ids, ids, *scratch]))
        t_sort = best_time(gpu, executor, sort.attrs["global_symbol"], sorted_)
        out = np.zeros((a.tokens, a.top_k, 2 * a.width), np.float32)
        planes = [up(params[s]) for s in fmt.suffixes]
        args = dict(enumerate([up(x), sorted_[0], sorted_[2], sorted_[3], *planes, up(out)]))
        t_grouped = best_time(gpu, executor, spec.name, args)
        t_gathered = best_time(gpu, executor, spec.name + "_gemv", args)
    print(
        f"{a.experts} experts, top {a.top_k}, hidden {a.hidden}, width {a.width}, {a.tokens} "
        f"tokens: sort {t_sort * 1e3:.1f} ms, grouped {t_grouped * 1e3:.1f} ms, "
        f"gathered {t_gathered * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
