"""The Relax pipeline for GPU targets (cuda, metal, webgpu, opencl): dlight schedules.

dlight's `gpu.Matmul` rule segfaults inside TVM 0.27's Tensorize on its tensor-core path for
cuda with float16 and for metal (every dtype); a crash kills the whole process, so those
targets leave the rule out and their matmuls fall through to GEMV/Reduction/Fallback.
`MATMUL_RULE_UNSAFE` records where. tests/targets/test_gpu_rules.py checks that those targets
leave the rule out and still compile, and re-runs each crash in a subprocess: when TVM fixes
one, that test fails and names the entry to remove.
"""

from __future__ import annotations

from collections.abc import Sequence

import tvm
from tvm import relax
from tvm.s_tir import dlight as dl

from mlcx.kernels.gpu.config import GpuConfig, gpu_config  # noqa: F401 (re-exported)
from mlcx.passes.fuse_rope_append import fuse_rope_append
from mlcx.passes.gpu.cuda_graph import mark_decode_capturable, rewrite_cuda_graph
from mlcx.passes.gpu.elementwise import Elementwise
from mlcx.passes.gpu.fuse_linear import fuse_linear_gpu
from mlcx.passes.gpu.schedule import apply_rules

# (target kind, activation dtype or "*") where dlight.gpu.Matmul crashes in TVM 0.27.
MATMUL_RULE_UNSAFE = {("cuda", "float16"), ("metal", "*")}


def matmul_rule_safe(kind: str, dtype: str) -> bool:
    return (kind, dtype) not in MATMUL_RULE_UNSAFE and (kind, "*") not in MATMUL_RULE_UNSAFE


def schedule_rules(kind: str, dtype: str, extra: Sequence = ()) -> list:
    """The rules in order: dlight's for reductions, `extra`, mlcx's Elementwise for injective
    kernels, and dlight's Fallback last (no kernel of the default model reaches it: the linear
    layers are mlcx's own kernels, tests/targets/test_gpu_rules.py checks the rest)."""
    rules = [dl.gpu.Matmul()] if matmul_rule_safe(kind, dtype) else []
    rest = [dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), *extra]
    return rules + rest + [Elementwise(), dl.gpu.Fallback()]


def gpu_graph_passes(
    target: tvm.target.Target, dtype: str, config: GpuConfig, extra_rules: Sequence = ()
) -> list[tvm.transform.Pass]:
    """Fusion, dlight schedules and call_tir lowering: the graph a non-VM executor walks (the
    WebGPU plan stops here; it allocates and frees tensors itself). Run inside `with target`."""
    return [
        fuse_rope_append(),
        fuse_linear_gpu(config),
        relax.backend.DispatchSampling(),
        relax.backend.DispatchSortScan(),
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        apply_rules(schedule_rules(target.kind.name, dtype, extra_rules)),
        relax.transform.RewriteDataflowReshape(),
        relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(),
        relax.transform.CallTIRRewrite(),
    ]


def vm_lowering_passes(graph_batch: int | None = None) -> list[tvm.transform.Pass]:
    """Memory planning and lowering to TVM's Relax VM builtins; with `graph_batch`, decode
    (batches up to it) runs as CUDA graphs (mlcx.passes.gpu.cuda_graph)."""
    graphs = [rewrite_cuda_graph()] if graph_batch else []
    return [
        *([mark_decode_capturable(graph_batch)] if graph_batch else []),
        relax.transform.StaticPlanBlockMemory(),
        *graphs,
        relax.transform.LowerAllocTensor(),
        relax.transform.KillAfterLastUse(),
        relax.transform.LowerRuntimeBuiltin(),
        relax.transform.ComputePrimValue(),
        relax.transform.VMShapeLower(),
        relax.transform.AttachGlobalSymbol(),
    ]


def gpu_pipeline(
    target: tvm.target.Target, dtype: str, config: GpuConfig, graph_batch: int | None = None
) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            passes = gpu_graph_passes(target, dtype, config) + vm_lowering_passes(graph_batch)
            return tvm.transform.Sequential(passes)(mod)

    return _pipeline
