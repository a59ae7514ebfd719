"""Evaluate the WebGPU plan's integer expression trees (see mlcx.targets.webgpu_plan.expr).

web/src/expr.js implements the same semantics; tests/webgpu checks both on one table of cases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Number = int | float


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_mod(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


OPS: dict[str, Callable[..., Number]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "floormod": lambda a, b: a % b,
    "div": _trunc_div,
    "mod": _trunc_mod,
    "min": min,
    "max": max,
    "eq": lambda a, b: int(a == b),
    "ne": lambda a, b: int(a != b),
    "lt": lambda a, b: int(a < b),
    "le": lambda a, b: int(a <= b),
    "gt": lambda a, b: int(a > b),
    "ge": lambda a, b: int(a >= b),
    "and": lambda a, b: int(bool(a) and bool(b)),
    "or": lambda a, b: int(bool(a) or bool(b)),
    "not": lambda a: int(not a),
}


def evaluate(tree, env: Mapping[str, int]) -> Number:
    if isinstance(tree, bool):
        return int(tree)
    if isinstance(tree, int | float):
        return tree
    if isinstance(tree, str):
        try:
            return env[tree]
        except KeyError:
            raise ValueError(f"plan expression uses unbound variable {tree!r}") from None
    op, *args = tree
    if op == "select":
        cond, then, other = args
        return evaluate(then, env) if evaluate(cond, env) else evaluate(other, env)
    if op not in OPS:
        raise ValueError(f"unknown plan expression operator {op!r}")
    return OPS[op](*(evaluate(a, env) for a in args))
