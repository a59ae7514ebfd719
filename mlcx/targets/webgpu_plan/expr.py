"""TIR integer expressions as small JSON trees, the form both plan executors evaluate.

A tree is an int (or float) literal, a variable name (str), or `[op, operand, ...]` with op one
of `OPS`. Integer division follows TIR: `floordiv`/`floormod` round toward minus infinity,
`div`/`mod` toward zero; comparisons and logic give 0 or 1; `select` is (cond, then, else).
Casts between integer types are dropped: plan values are sizes and offsets far below 2**31.
"""

from __future__ import annotations

from collections.abc import Callable

import tvm
from tvm import tirx

from mlcx.targets.webgpu_plan.schema import Expr, PlanError

_BINARY: dict[type, str] = {
    tirx.Add: "add",
    tirx.Sub: "sub",
    tirx.Mul: "mul",
    tirx.FloorDiv: "floordiv",
    tirx.FloorMod: "floormod",
    tirx.Div: "div",
    tirx.Mod: "mod",
    tirx.Min: "min",
    tirx.Max: "max",
    tirx.EQ: "eq",
    tirx.NE: "ne",
    tirx.LT: "lt",
    tirx.LE: "le",
    tirx.GT: "gt",
    tirx.GE: "ge",
    tirx.And: "and",
    tirx.Or: "or",
}

# Resolves a free variable: a name, or a tree to put in its place (let values, constants).
Resolver = Callable[[tirx.Var], Expr]


def to_tree(expr, resolve: Resolver) -> Expr:
    """Serialize a PrimExpr (or a Python int) by walking it."""
    if isinstance(expr, bool | int | float):
        return int(expr) if isinstance(expr, bool) else expr
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.FloatImm):
        return float(expr.value)
    if isinstance(expr, tirx.Var):
        return resolve(expr)
    kind = _BINARY.get(type(expr))
    if kind is not None:
        return [kind, to_tree(expr.a, resolve), to_tree(expr.b, resolve)]
    if isinstance(expr, tirx.Not):
        return ["not", to_tree(expr.a, resolve)]
    if isinstance(expr, tirx.Select):
        parts = (expr.condition, expr.true_value, expr.false_value)
        return ["select", *(to_tree(p, resolve) for p in parts)]
    if isinstance(expr, tirx.Cast):
        return _cast(expr, resolve)
    if isinstance(expr, tirx.Let):
        value = to_tree(expr.value, resolve)
        return to_tree(expr.body, lambda v: value if v.same_as(expr.var) else resolve(v))
    if isinstance(expr, tvm.ir.Call) and expr.op.name == "tirx.if_then_else":
        return ["select", *(to_tree(a, resolve) for a in expr.args)]
    raise PlanError(f"cannot serialize {type(expr).__name__} `{expr}` into the WebGPU plan")


def _cast(expr: tirx.Cast, resolve: Resolver) -> Expr:
    dtype = str(expr.ty.dtype)
    if not dtype.startswith(("int", "uint", "bool")):
        raise PlanError(f"only integer casts can go into the WebGPU plan, not `{expr}`")
    return to_tree(expr.value, resolve)


def by_name(var: tirx.Var) -> Expr:
    """The default resolver: a free variable is referred to by its name."""
    return str(var.name)
