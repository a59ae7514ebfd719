"""The Relax pipeline for GPU targets (cuda, metal, webgpu, opencl): dlight schedules.

dlight's `gpu.Matmul` rule tensorizes for cuda with float16 (wmma) and for metal (simdgroup
matrices). Tensorize copies the tensor intrinsic through TVM's JSON serializer, which segfaults
when TVM 0.27.0.post1 runs on apache-tvm-ffi 0.1.15 (any `tvm.ir.save_json` does; 0.1.14.post1
works, and pyproject pins it): `MATMUL_RULE_UNSAFE` lists the configurations that tensorize,
which leave the rule out under such an ffi (mlcx.kernels.gpu.tensor_core.tensorize_works).
tests/targets/test_gpu_rules.py reproduces the crash without mlcx in a subprocess.
"""

from __future__ import annotations

from collections.abc import Sequence

import tvm
from tvm import relax
from tvm.s_tir import dlight as dl

from mlcx.kernels.gpu.config import GpuConfig, gpu_config  # noqa: F401 (re-exported)
from mlcx.kernels.gpu.tensor_core import tensorize_works
from mlcx.kernels.gpu.tensor_intrinsics import load_tensor_intrinsics
from mlcx.passes.fuse_rope_append import fuse_rope_append
from mlcx.passes.gpu.cuda_graph import mark_decode_capturable, rewrite_cuda_graph
from mlcx.passes.gpu.decode_gemv_rule import DecodeGEMV
from mlcx.passes.gpu.elementwise import Elementwise
from mlcx.passes.gpu.experts_rule import ExpertGEMV
from mlcx.passes.gpu.fuse_experts import fuse_experts_gpu
from mlcx.passes.gpu.fuse_linear import fuse_linear_gpu
from mlcx.passes.gpu.schedule import apply_rules
from mlcx.passes.gpu.tensor_core_prefill import decode_gemv, tensor_core_prefill
from mlcx.passes.gpu.topk_rule import RouterTopK

# (target kind, activation dtype or "*") where dlight.gpu.Matmul tensorizes, which crashes
# TVM 0.27 under apache-tvm-ffi 0.1.15.
MATMUL_RULE_UNSAFE = {("cuda", "float16"), ("metal", "*")}


def _tensorizes(kind: str, dtype: str) -> bool:
    return (kind, dtype) in MATMUL_RULE_UNSAFE or (kind, "*") in MATMUL_RULE_UNSAFE


def matmul_rule_safe(kind: str, dtype: str) -> bool:
    return not _tensorizes(kind, dtype) or tensorize_works()


def schedule_rules(kind: str, dtype: str, extra: Sequence = (), matmul: bool = True) -> list:
    """The rules in order: dlight's for reductions, `extra`, mlcx's Elementwise for injective
    kernels, and dlight's Fallback last (no kernel of the default model reaches it: the linear
    layers are mlcx's own kernels, tests/targets/test_gpu_rules.py checks the rest).
    `matmul`: False leaves dlight's Matmul out (its batched matmuls go to the reduction rules)."""
    if _tensorizes(kind, dtype) and tensorize_works():
        load_tensor_intrinsics()  # before the rule imports them, ~20x slower
    rules = [
        DecodeGEMV(),
        ExpertGEMV(),
        RouterTopK(),
        *([dl.gpu.Matmul()] if matmul and matmul_rule_safe(kind, dtype) else []),
    ]
    rest = [dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), *extra]
    return rules + rest + [Elementwise(), dl.gpu.Fallback()]


def gpu_graph_passes(
    target: tvm.target.Target,
    dtype: str,
    config: GpuConfig,
    extra_rules: Sequence = (),
    low_batch_gemv: bool = True,
    matrix_units: bool = True,
    matmul: bool = True,
) -> list[tvm.transform.Pass]:
    """Fusion, dlight schedules and call_tir lowering: the graph a non-VM executor walks (the
    WebGPU plan stops here; it allocates and frees tensors itself). Run inside `with target`.
    `low_batch_gemv`: on cuda (f16), decode's linears are dlight's LowBatchGEMV, else mlcx's.
    `matrix_units`: False keeps prefill's linears off tensor cores where the target has them.
    `matmul`: False leaves dlight's Matmul rule out (schedule_rules)."""
    return [
        fuse_rope_append(),
        tensor_core_prefill(target, dtype, matrix_units),
        decode_gemv(target, dtype, low_batch_gemv),
        fuse_linear_gpu(config),
        fuse_experts_gpu(config),
        relax.backend.DispatchSampling(),
        relax.backend.DispatchSortScan(),
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        apply_rules(schedule_rules(target.kind.name, dtype, extra_rules, matmul)),
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
    target: tvm.target.Target,
    dtype: str,
    config: GpuConfig,
    graph_batch: int | None = None,
    low_batch_gemv: bool = True,
    matrix_units: bool = True,
) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            graph = gpu_graph_passes(
                target, dtype, config, low_batch_gemv=low_batch_gemv, matrix_units=matrix_units
            )
            passes = graph + vm_lowering_passes(graph_batch)
            return tvm.transform.Sequential(passes)(mod)

    return _pipeline
