"""What the CPU and GPU linear rewrites share: finding the TE linear layers of a Relax module
(PrimFuncs carrying the `mlcx.linear` block annotation, see mlcx.kernels.linear), the producers
and users of values in a dataflow block, the residual add that consumes a linear's output, and
the function-by-function rewrite that swaps calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import relax, s_tir

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
class Block:
    """Producers and user counts of one dataflow block."""

    values: dict
    users: dict

    @staticmethod
    def of(block: relax.DataflowBlock) -> Block:
        values = {b.var: b.value for b in block.bindings}
        users: dict = {}
        for binding in block.bindings:
            for var in relax.analysis.free_vars(binding.value):
                users[var] = users.get(var, 0) + 1
        return Block(values, users)

    def sole(self, var) -> relax.Expr | None:
        """The value bound to var if var is local to the block and used exactly once."""
        if not isinstance(var, relax.DataflowVar) or self.users.get(var, 0) != 1:
            return None
        return self.values.get(var)


def is_op(expr, name: str) -> bool:
    return isinstance(expr, relax.Call) and getattr(expr.op, "name", None) == name


def residual_add(var, block: Block, adds: dict):
    """(add var, other operand) when var's only use is a same-shape residual add."""
    for add_var, value in adds.items():
        if any(arg.same_as(var) for arg in value.args) and block.sole(var) is not None:
            other = value.args[1] if value.args[0].same_as(var) else value.args[0]
            if not other.same_as(var) and tvm_ffi.structural_equal(other.ty, var.ty):
                return add_var, other
    return None


def swiglu_input(value, block: Block) -> relax.Expr | None:
    """gate_up when value = silu(gate) * up of a 2-way split of gate_up on its last axis, every
    intermediate used only here (so a linear can compute SwiGLU from gate_up itself)."""
    if not is_op(value, "relax.multiply"):
        return None
    first, second = value.args
    for gate, up in ((first, second), (second, first)):
        silu = block.sole(gate)
        if not is_op(silu, "relax.nn.silu"):
            continue
        gate_item, up_item = block.sole(silu.args[0]), block.values.get(up)
        if not (
            isinstance(gate_item, relax.TupleGetItem) and isinstance(up_item, relax.TupleGetItem)
        ):
            continue
        split = block.values.get(gate_item.tuple_value)
        halves = is_op(split, "relax.split") and isinstance(
            split.attrs.indices_or_sections, tvm.tirx.IntImm
        )
        if (
            halves
            and int(split.attrs.indices_or_sections) == 2
            and int(split.attrs.axis) in (-1, 1)
            and gate_item.tuple_value.same_as(up_item.tuple_value)
            and (gate_item.index, up_item.index) == (0, 1)
        ):
            return split.args[0]
    return None


@dataclass(frozen=True)
class LinearCall:
    """A call of a TE linear layer: its weight format, input, weight planes and result var."""

    fmt: WeightFormat
    x: relax.Expr
    weights: list
    var: relax.Var

    @property
    def features(self) -> tuple[int, int]:
        """(in, out) features."""
        return int(self.x.ty.shape[1]), int(self.var.ty.shape[1])


class LinearRewriter:
    """Swaps linear calls for kernels that `build(spec)` makes, one PrimFunc per spec; the
    target's `plan(binding, block, adds)` decides what each call becomes (see Planner)."""

    def __init__(self, mod: tvm.IRModule, build: Callable):
        self.mod = mod
        self.builder = relax.BlockBuilder(mod)
        self.build = build
        self.kernels: dict = {}

    def kernel(self, spec) -> relax.GlobalVar:
        if spec not in self.kernels:
            self.kernels[spec] = self.builder.add_func(self.build(spec), spec.name)
        return self.kernels[spec]

    def linear(self, binding) -> LinearCall | None:
        value = binding.value
        if not is_op(value, "relax.call_tir"):
            return None
        fmt = linear_format(self.mod[value.args[0]])
        if fmt is None:
            return None
        x, *weights = value.args[1].fields
        return LinearCall(fmt, x, weights, binding.var)

    def call(self, spec, args: list, found: LinearCall, residual) -> tuple:
        """(var to rebind, the kernel's call): the residual add's var when it is fused."""
        target, extra = (residual[0], [residual[1]]) if residual else (found.var, [])
        call = relax.call_tir(self.kernel(spec), relax.Tuple([*args, *extra]), found.var.ty)
        return target, call

    def run(self, plan) -> tvm.IRModule:
        return rewrite_module(self.mod, self.builder, plan)

    @classmethod
    def module_pass(cls, name: str, cfg) -> tvm.transform.Pass:
        """The pass `name`: a `cls(mod, cfg)` (a subclass with a `plan`) rewrites the module."""

        @tvm.transform.module_pass(opt_level=0, name=name)
        def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
            rewriter = cls(mod, cfg)
            return rewriter.run(rewriter.plan)

        return _pass


# A planner looks at one binding of a block and returns (var to rebind, new call), a list of
# such pairs, or None.
Planner = Callable[[relax.VarBinding, "Block", dict], "tuple | list[tuple] | None"]


def rewrite_block(block: relax.DataflowBlock, planner: Planner) -> relax.DataflowBlock:
    info = Block.of(block)
    adds = {b.var: b.value for b in block.bindings if is_op(b.value, "relax.add")}
    replace = {}
    for binding in block.bindings:
        found = planner(binding, info, adds)
        for target, value in [found] if isinstance(found, tuple) else found or []:
            replace[target] = value
    bindings = [
        relax.VarBinding(b.var, replace[b.var]) if b.var in replace else b for b in block.bindings
    ]
    return relax.DataflowBlock(bindings)


def rewrite_dataflow(
    mod: tvm.IRModule,
    builder: relax.BlockBuilder,
    rewrite: Callable[[relax.DataflowBlock], relax.DataflowBlock],
) -> tvm.IRModule:
    """Every Relax function's dataflow blocks through `rewrite` (into `builder`'s module), dead
    code removed: the shell of each Relax rewrite pass of mlcx."""
    for gvar, func in list(mod.functions.items()):
        if not isinstance(func, relax.Function):
            continue
        body = func.body
        blocks = [rewrite(b) if isinstance(b, relax.DataflowBlock) else b for b in body.blocks]
        seq = relax.SeqExpr(blocks, body.body)
        new = relax.Function(func.params, seq, func.ret_ty, func.is_pure, func.attrs)
        builder.update_func(gvar, new)
    return relax.transform.DeadCodeElimination()(builder.get())


def rewrite_module(mod: tvm.IRModule, builder: relax.BlockBuilder, planner: Planner):
    """Every Relax function's dataflow blocks rewritten by `planner`, dead code removed."""
    return rewrite_dataflow(mod, builder, lambda block: rewrite_block(block, planner))
