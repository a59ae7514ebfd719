"""The Relax pipeline for GPU targets (cuda, metal, webgpu, opencl): dlight schedules.

dlight's `gpu.Matmul` rule segfaults inside TVM 0.27's Tensorize on its tensor-core path for
cuda with float16 and for metal (every dtype); a crash kills the whole process, so those
targets leave the rule out and their matmuls fall through to GEMV/Reduction/Fallback.
`MATMUL_RULE_UNSAFE` records where; tests/targets keep a check that fails if it comes back.
"""

from __future__ import annotations

import tvm
from tvm import relax
from tvm.s_tir import dlight as dl

from mlcx.targets.base import BuildOptions

# (target kind, activation dtype or "*") where dlight.gpu.Matmul crashes in TVM 0.27.
MATMUL_RULE_UNSAFE = {("cuda", "float16"), ("metal", "*")}


def matmul_rule_safe(kind: str, dtype: str) -> bool:
    return (kind, dtype) not in MATMUL_RULE_UNSAFE and (kind, "*") not in MATMUL_RULE_UNSAFE


def schedule_rules(kind: str, dtype: str) -> list:
    rules = [dl.gpu.Matmul()] if matmul_rule_safe(kind, dtype) else []
    return rules + [dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback()]


def gpu_pipeline(
    target: tvm.target.Target, options: BuildOptions, dtype: str
) -> tvm.transform.Pass:
    rules = schedule_rules(target.kind.name, dtype)

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        with target:
            seq = tvm.transform.Sequential(
                [
                    relax.backend.DispatchSampling(),
                    relax.backend.DispatchSortScan(),
                    relax.transform.LegalizeOps(),
                    relax.transform.AnnotateTIROpPattern(),
                    relax.transform.FoldConstant(),
                    relax.transform.FuseOps(),
                    relax.transform.FuseTIR(),
                    dl.ApplyDefaultSchedule(*rules),
                    relax.transform.RewriteDataflowReshape(),
                    relax.transform.ToNonDataflow(),
                    relax.transform.RemovePurityChecking(),
                    relax.transform.CallTIRRewrite(),
                    relax.transform.StaticPlanBlockMemory(),
                    relax.transform.LowerAllocTensor(),
                    relax.transform.KillAfterLastUse(),
                    relax.transform.LowerRuntimeBuiltin(),
                    relax.transform.ComputePrimValue(),
                    relax.transform.VMShapeLower(),
                    relax.transform.AttachGlobalSymbol(),
                ]
            )
            return seq(mod)

    return _pipeline
