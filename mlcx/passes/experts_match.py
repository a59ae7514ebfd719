"""What the CPU and GPU expert rewrites share: finding the TE expert GEMVs of a Relax module
(PrimFuncs whose block carries the `mlcx.experts` annotation, see mlcx.kernels.moe) and reading
a call of one: its kind, weight format, operands and shapes."""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import relax, s_tir

from mlcx.kernels.moe import EXPERTS_ATTR
from mlcx.passes.linear_match import Block, is_op, swiglu_input
from mlcx.quantization.formats import WeightFormat, format_from_name

KINDS = {"experts_gate_up": "gate_up", "experts_down": "down"}  # TE block name -> kind


def experts_kind(func) -> tuple[str, WeightFormat] | None:
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


def _dims(expr) -> list[int | None]:
    shape = expr.ty.shape
    return [int(d) if isinstance(d, tvm.tirx.IntImm) else None for d in shape.values]


@dataclass(frozen=True)
class ExpertsCall:
    """A call of a TE expert GEMV. `swiglu`: (down) the gate/up output whose silu(gate) * up is
    the input, when that product has no other use (the kernel can compute it)."""

    kind: str
    fmt: WeightFormat
    x: relax.Expr
    ids: relax.Expr
    weights: list
    var: relax.Var
    swiglu: relax.Expr | None

    @property
    def experts(self) -> int:
        return _dims(self.weights[0])[0] // self.out_features

    @property
    def slots(self) -> int:
        return _dims(self.var)[1]

    @property
    def out_features(self) -> int:
        return _dims(self.var)[2]

    @property
    def in_features(self) -> int:
        return _dims(self.x)[-1]


def experts_call(mod: tvm.IRModule, binding, info: Block) -> ExpertsCall | None:
    value = binding.value
    if not is_op(value, "relax.call_tir"):
        return None
    found = experts_kind(mod[value.args[0]])
    if found is None:
        return None
    kind, fmt = found
    x, ids, *weights = value.args[1].fields
    swiglu = None
    if kind == "down" and isinstance(x, relax.DataflowVar):
        swiglu = swiglu_input(info.sole(x), info)
    return ExpertsCall(kind, fmt, x, ids, weights, binding.var, swiglu)
