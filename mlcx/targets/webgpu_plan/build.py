"""Build the WebGPU plan of an exported model: graph passes, TIR lowering, IR walks, shaders."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tvm
from tvm import relax

from mlcx.passes.pipeline_gpu import gpu_config, gpu_graph_passes
from mlcx.passes.tir_lowering import lower_tir
from mlcx.targets.device_code import activation_dtype, kv_pages_dtype
from mlcx.targets.webgpu_plan.dequant_gemv import DequantGEMV
from mlcx.targets.webgpu_plan.host_launches import tir_function
from mlcx.targets.webgpu_plan.relax_walk import walk_function
from mlcx.targets.webgpu_plan.schema import PLAN_FILE, Kernel, Plan
from mlcx.targets.webgpu_plan.shaders import kernel_sources
from mlcx.targets.webgpu_plan.storage_legalize import legalize_storage, uses_f16

SHADER_DIR = "shaders"


@dataclass(frozen=True)
class PlanBundle:
    """What `mlcx compile` writes for a WebGPU plan target: the plan and its shaders."""

    plan: Plan
    shaders: dict[str, str]  # path relative to the artifact -> WGSL source

    def write(self, out_dir: Path) -> str:
        for rel, source in self.shaders.items():
            path = out_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source)
        (out_dir / PLAN_FILE).write_text(self.plan.to_json())
        return PLAN_FILE


def _lower_tir(graph: tvm.IRModule, names: set[str], target: tvm.target.Target, keep_f16: bool):
    lowered = lower_tir(graph, names, target)
    with tvm.transform.PassContext(opt_level=3):
        device = lowered.finalize_device()(lowered.device_module())
    legal = {gv: legalize_storage(f, keep_f16) for gv, f in device.functions.items()}
    return lowered.host_functions(), tvm.IRModule(legal)


def _kernels(sources, blocks) -> dict[str, Kernel]:
    return {
        name: Kernel(name, f"{SHADER_DIR}/{name}.wgsl", s.arg_types, s.write_access, blocks[name])
        for name, s in sources.items()
        if name in blocks
    }


def _features(dtype: str, device: tvm.IRModule, sources) -> tuple[str, ...]:
    f16 = dtype == "float16" or any(uses_f16(f) for f in device.functions.values())
    subgroups = any(s.uses_subgroups for s in sources.values())
    return ("shader-f16",) * f16 + ("subgroups",) * subgroups


def _pages_dtype(mod: tvm.IRModule) -> str:
    """The KV pages' dtype; "" for a module without them (an image encoder)."""
    try:
        return kv_pages_dtype(mod)
    except ValueError:
        return ""


def build_plan(
    mod: tvm.IRModule, target: tvm.target.Target, subgroups: bool = True, matmul: bool = True
) -> PlanBundle:
    """`target` is a webgpu target with an LLVM host; `matmul`: as gpu_graph_passes'."""
    dtype = activation_dtype(mod)
    with target:
        config = gpu_config(target, subgroups)
        rules = [DequantGEMV()]
        passes = gpu_graph_passes(target, dtype, config, extra_rules=rules, matmul=matmul)
        graph = tvm.transform.Sequential(passes)(mod)
    functions = {
        gv.name_hint: walk_function(f, gv.name_hint)
        for gv, f in graph.functions.items()
        if isinstance(f, relax.Function)
    }
    called = {s.func for f in functions.values() for s in f.steps if s.op == "call"}
    # f16 KV pages under f32 math keep f16 too: the plan then needs shader-f16
    keep_f16 = "float16" in (dtype, _pages_dtype(mod))
    host, device = _lower_tir(graph, called, target, keep_f16=keep_f16)
    sources = kernel_sources(device)
    counts = {name: s.num_buffers for name, s in sources.items()}
    tir_functions, blocks = {}, {}
    for name in sorted(called):
        tir_functions[name], kernel_blocks = tir_function(host[name], name, counts)
        blocks.update(kernel_blocks)
    kernels = _kernels(sources, blocks)
    plan = Plan(dtype, _features(dtype, device, sources), kernels, tir_functions, functions)
    shaders = {k.shader: sources[k.name].wgsl for k in kernels.values()}
    return PlanBundle(plan, shaders)
