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
from tvm import relax, s_tir

from mlcx.kernels.cpu import tiled_reader
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.qexperts import ExpertSpec, build_expert_linear
from mlcx.kernels.moe import EXPERTS_ATTR
from mlcx.passes.linear_match import Block, LinearRewriter, is_op, swiglu_input
from mlcx.quantization.formats import format_from_name

KINDS = {"experts_gate_up": "gate_up", "experts_down": "down"}  # TE block name -> kind


def experts_kind(func) -> tuple[str, object] | None:
    """(kind, weight format) of a TE expert GEMV PrimFunc, from its block annotation."""
    if not isinstance(func, tvm.tirx.PrimFunc) or func.attrs and "tirx.is_scheduled" in func.attrs:
        return None
    try:
        sch = s_tir.Schedule(func)
        blocks = [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
    except Exception:  # hand-written TIR: not an expert GEMV
        return None
    for block in blocks:
        if EXPERTS_ATTR in block.annotations and block.name_hint in KINDS:
            return KINDS[block.name_hint], format_from_name(str(block.annotations[EXPERTS_ATTR]))
    return None


def _dims(expr) -> list[int] | None:
    shape = expr.ty.shape
    return [int(d) if isinstance(d, tvm.tirx.IntImm) else None for d in shape.values]


class _Fuser(LinearRewriter):
    def __init__(self, mod: tvm.IRModule, cfg: KernelConfig):
        super().__init__(mod, lambda spec: build_expert_linear(spec, cfg))

    def plan(self, binding, info: Block, _adds):
        value = binding.value
        if not is_op(value, "relax.call_tir"):
            return None
        found = experts_kind(self.mod[value.args[0]])
        if found is None:
            return None
        kind, fmt = found
        x, ids, *weights = value.args[1].fields
        if x.ty.dtype != "float32" or binding.var.ty.dtype != "float32":
            return None
        if not tiled_reader.supports(fmt):
            return None
        spec, x = self._spec(kind, fmt, x, weights, binding.var, info)
        if spec is None:
            return None
        call = relax.call_tir(self.kernel(spec), relax.Tuple([x, ids, *weights]), binding.var.ty)
        return binding.var, call

    def _spec(self, kind, fmt, x, weights, var, info):
        out = _dims(var)  # [tokens, slots, N]
        rows = _dims(weights[0])[0]
        slots, n, k = out[1], out[2], _dims(x)[-1]
        swiglu = None
        if kind == "down" and isinstance(x, relax.DataflowVar):
            swiglu = swiglu_input(info.sole(x), info)
        try:
            spec = ExpertSpec(
                fmt, rows // n, slots, k, n, per_slot=kind == "down",
                fused=kind == "gate_up", swiglu=swiglu is not None,
            )  # fmt: skip
        except ValueError:  # shapes that do not tile
            return None, x
        return spec, swiglu if swiglu is not None else x


def fuse_experts(cfg: KernelConfig) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name="mlcx.FuseExpertsCPU")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        fuser = _Fuser(mod, cfg)
        return fuser.run(fuser.plan)

    return _pass
