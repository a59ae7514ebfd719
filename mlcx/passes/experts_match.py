"""What the CPU and GPU expert rewrites share: finding the TE expert GEMVs of a Relax module
(PrimFuncs whose block carries the `mlcx.experts` annotation, see mlcx.kernels.moe) and reading
a call of one: its kind, weight format, operands (a per-row bias after the weight planes) and
shapes, and the gated activation feeding a down projection (the TE activation annotated
`mlcx.expert_glu`, or silu(gate) * up written as Relax ops)."""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import relax, s_tir

from mlcx.kernels.moe import EXPERTS_ATTR, GLU_ATTR
from mlcx.kernels.moe_options import SILU, GluActivation
from mlcx.passes.linear_match import Block, is_op, swiglu_input
from mlcx.quantization.formats import WeightFormat, format_from_name

KINDS = {"experts_gate_up": "gate_up", "experts_down": "down"}  # TE block name -> kind


def _blocks(func) -> list:
    """The root's child blocks of a TE PrimFunc ([] for anything else)."""
    if not isinstance(func, tvm.tirx.PrimFunc) or func.attrs and "tirx.is_scheduled" in func.attrs:
        return []
    try:
        sch = s_tir.Schedule(func)
        return [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
    except Exception:  # hand-written TIR: not a TE function
        return []


def experts_kind(func) -> tuple[str, WeightFormat] | None:
    """(kind, weight format) of a TE expert GEMV PrimFunc, from its block annotation."""
    for block in _blocks(func):
        if EXPERTS_ATTR in block.annotations and block.name_hint in KINDS:
            return KINDS[block.name_hint], format_from_name(str(block.annotations[EXPERTS_ATTR]))
    return None


def _dims(expr) -> list[int | None]:
    shape = expr.ty.shape
    return [int(d) if isinstance(d, tvm.tirx.IntImm) else None for d in shape.values]


def glu_call(mod: tvm.IRModule, value) -> tuple[relax.Expr, GluActivation] | None:
    """(gate/up, activation) when `value` calls the TE gated activation (mlcx.kernels.moe)."""
    if not is_op(value, "relax.call_tir"):
        return None
    for block in _blocks(mod[value.args[0]]):
        if GLU_ATTR in block.annotations:
            text = str(block.annotations[GLU_ATTR])
            return value.args[1].fields[0], GluActivation.from_annotation(text)
    return None


@dataclass(frozen=True)
class ExpertsCall:
    """A call of a TE expert GEMV. `swiglu`: (down) the gate/up output whose activation `glu`
    is the input, when the activation has no other use (the kernel can compute it); `bias`:
    the per-row bias the GEMV adds, if any."""

    kind: str
    fmt: WeightFormat
    x: relax.Expr
    ids: relax.Expr
    weights: list
    var: relax.Var
    swiglu: relax.Expr | None
    glu: GluActivation = SILU
    bias: relax.Expr | None = None

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
    x, ids, *rest = value.args[1].fields
    count = len(fmt.suffixes)
    weights, bias = rest[:count], (rest[count] if len(rest) > count else None)
    swiglu, glu = None, SILU
    if kind == "down" and isinstance(x, relax.DataflowVar):
        producer = info.sole(x)
        fused = glu_call(mod, producer) if producer is not None else None
        swiglu, glu = fused if fused is not None else (swiglu_input(producer, info), SILU)
    return ExpertsCall(kind, fmt, x, ids, weights, binding.var, swiglu, glu, bias)
