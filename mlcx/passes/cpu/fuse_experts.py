"""Relax pass: the mixture-of-experts GEMVs (mlcx.kernels.moe) become mlcx's CPU expert kernels
(mlcx.kernels.cpu.qexperts), which read row-tiled stacked weights with integer activations and
group a step's rows by expert, so a prefill reads each expert's weights once per 8 rows instead
of once per token. The down projection absorbs the silu(gate) * up that feeds it.

A call is swapped when its weights are row-tiled and its activations float32; anything else
(float weights, shapes that do not tile) keeps the TE GEMV and its schedule
(mlcx.passes.cpu.experts_schedule).
"""

from __future__ import annotations

import tvm
from tvm import relax

from mlcx.kernels.cpu import tiled_reader
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.qexperts import ExpertSpec, build_expert_linear
from mlcx.passes.experts_match import experts_call
from mlcx.passes.linear_match import Block, LinearRewriter


class _Fuser(LinearRewriter):
    def __init__(self, mod: tvm.IRModule, cfg: KernelConfig):
        super().__init__(mod, lambda spec: build_expert_linear(spec, cfg))

    def plan(self, binding, info: Block, _adds):
        found = experts_call(self.mod, binding, info)
        if found is None or not tiled_reader.supports(found.fmt):
            return None
        if found.x.ty.dtype != "float32" or found.var.ty.dtype != "float32":
            return None
        try:
            spec = ExpertSpec(
                found.fmt, found.experts, found.slots, found.in_features, found.out_features,
                per_slot=found.kind == "down", fused=found.kind == "gate_up",
                swiglu=found.swiglu is not None, bias=found.bias is not None, glu=found.glu,
            )  # fmt: skip
        except ValueError:  # shapes that do not tile
            return None
        x = found.swiglu if found.swiglu is not None else found.x
        bias = [found.bias] if found.bias is not None else []
        args = relax.Tuple([x, found.ids, *found.weights, *bias])
        return found.var, relax.call_tir(self.kernel(spec), args, found.var.ty)


def fuse_experts(cfg: KernelConfig) -> tvm.transform.Pass:
    return _Fuser.module_pass("mlcx.FuseExpertsCPU", cfg)
