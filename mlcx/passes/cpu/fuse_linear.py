"""Relax pass: every linear layer becomes one hand-written CPU kernel with its neighbours fused.

Matches, in each dataflow block, a call to a PrimFunc carrying the `mlcx.linear` annotation
(mlcx.kernels.linear) and replaces it with a kernel from `linear_kernels`, absorbing
- the RMSNorm or SwiGLU (silu(gate) * up of a 2-way split) that produced its input, and
- the residual add that consumes its output,
when those intermediate values have no other user. Dead bindings and the replaced TE
functions are removed afterwards by dead-code elimination.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import relax, s_tir

from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_kernels import build_linear, can_build
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.kernels.linear import LINEAR_ATTR
from mlcx.quantization.formats import WeightFormat, format_from_name


def linear_format(func) -> WeightFormat | None:
    """The weight format a TE linear PrimFunc was built for, from its block annotation."""
    if not isinstance(func, tvm.tirx.PrimFunc) or func.attrs and "tirx.is_scheduled" in func.attrs:
        return None
    try:
        sch = s_tir.Schedule(func)
        blocks = [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
    except Exception:  # not a TE-shaped function (hand-written TIR): not a linear
        return None
    names = [str(b.annotations[LINEAR_ATTR]) for b in blocks if LINEAR_ATTR in b.annotations]
    return format_from_name(names[0]) if names else None


@dataclass
class _Block:
    """Producers and user counts of one dataflow block."""

    values: dict
    users: dict

    @staticmethod
    def of(block: relax.DataflowBlock) -> _Block:
        values = {b.var: b.value for b in block.bindings}
        users: dict = {}
        for binding in block.bindings:
            for var in relax.analysis.free_vars(binding.value):
                users[var] = users.get(var, 0) + 1
        return _Block(values, users)

    def sole(self, var) -> relax.Expr | None:
        """The value bound to var if var is local to the block and used exactly once."""
        if not isinstance(var, relax.DataflowVar) or self.users.get(var, 0) != 1:
            return None
        return self.values.get(var)


def _op(expr, name: str) -> bool:
    return isinstance(expr, relax.Call) and getattr(expr.op, "name", None) == name


def _rmsnorm(value, features: int):
    attrs = value.attrs
    if [int(a) for a in attrs.axes] not in ([-1], [1]):
        return None
    return RmsNormRows(features, float(attrs.epsilon)), [value.args[0], value.args[1]]


def _swiglu(value, block: _Block, features: int):
    first, second = value.args
    for gate, up in ((first, second), (second, first)):
        silu = block.sole(gate)
        if not _op(silu, "relax.nn.silu"):
            continue
        gate_item, up_item = block.sole(silu.args[0]), block.values.get(up)
        if not isinstance(gate_item, relax.TupleGetItem) or not isinstance(
            up_item, relax.TupleGetItem
        ):
            continue
        split = block.values.get(gate_item.tuple_value)
        halves = _op(split, "relax.split") and isinstance(
            split.attrs.indices_or_sections, tvm.tirx.IntImm
        )
        if (
            halves
            and int(split.attrs.indices_or_sections) == 2
            and int(split.attrs.axis) in (-1, 1)
            and gate_item.tuple_value.same_as(up_item.tuple_value)
            and (gate_item.index, up_item.index) == (0, 1)
        ):
            return SwiGluRows(features), [split.args[0]]
    return None


def _source(x, block: _Block, features: int):
    """(row source, its Relax inputs) for the linear input x."""
    value = block.sole(x)
    found = None
    if _op(value, "relax.nn.rms_norm"):
        found = _rmsnorm(value, features)
    elif _op(value, "relax.multiply"):
        found = _swiglu(value, block, features)
    return found or (PlainRows(features), [x])


def _residual(var, block: _Block, adds: dict):
    """(add var, other operand) when var's only use is a same-shape residual add."""
    for add_var, value in adds.items():
        if any(arg.same_as(var) for arg in value.args) and block.sole(var) is not None:
            other = value.args[1] if value.args[0].same_as(var) else value.args[0]
            if not other.same_as(var) and tvm_ffi.structural_equal(other.ty, var.ty):
                return add_var, other
    return None


class _Fuser:
    def __init__(self, mod: tvm.IRModule, cfg: KernelConfig):
        self.mod = mod
        self.builder = relax.BlockBuilder(mod)
        self.cfg = cfg
        self.kernels: dict[LinearSpec, relax.GlobalVar] = {}

    def kernel(self, spec: LinearSpec) -> relax.GlobalVar:
        if spec not in self.kernels:
            self.kernels[spec] = self.builder.add_func(build_linear(spec, self.cfg), spec.name)
        return self.kernels[spec]

    def rewrite_block(self, block: relax.DataflowBlock) -> relax.DataflowBlock:
        info = _Block.of(block)
        adds = {b.var: b.value for b in block.bindings if _op(b.value, "relax.add")}
        replace = {}
        for binding in block.bindings:
            found = self.plan(binding, info, adds)
            if found is not None:
                target, call = found
                replace[target] = call
        bindings = [
            relax.VarBinding(b.var, replace[b.var]) if b.var in replace else b
            for b in block.bindings
        ]
        return relax.DataflowBlock(bindings)

    def plan(self, binding, info: _Block, adds: dict):
        value = binding.value
        if not _op(value, "relax.call_tir"):
            return None
        fmt = linear_format(self.mod[value.args[0]])
        x, *weights = value.args[1].fields
        if fmt is None or x.ty.dtype != "float32" or binding.var.ty.dtype != "float32":
            return None
        features, out_features = int(x.ty.shape[1]), int(binding.var.ty.shape[1])
        source, inputs = _source(x, info, features)
        residual = _residual(binding.var, info, adds)
        spec = LinearSpec(source, fmt, out_features, residual is not None)
        if not can_build(spec, self.cfg):
            return None
        target, extra = (residual[0], [residual[1]]) if residual else (binding.var, [])
        args = relax.Tuple([*inputs, *weights, *extra])
        return target, relax.call_tir(self.kernel(spec), args, binding.var.ty)


def _rewrite_function(func: relax.Function, fuser: _Fuser) -> relax.Function:
    body = func.body
    blocks = [
        fuser.rewrite_block(b) if isinstance(b, relax.DataflowBlock) else b for b in body.blocks
    ]
    seq = relax.SeqExpr(blocks, body.body)
    return relax.Function(func.params, seq, func.ret_ty, func.is_pure, func.attrs)


def fuse_linear(cfg: KernelConfig) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name="mlcx.FuseLinearCPU")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        fuser = _Fuser(mod, cfg)
        for gvar, func in list(mod.functions.items()):
            if isinstance(func, relax.Function):
                fuser.builder.update_func(gvar, _rewrite_function(func, fuser))
        return relax.transform.DeadCodeElimination()(fuser.builder.get())

    return _pass
