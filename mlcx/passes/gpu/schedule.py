"""dlight-style default scheduling that records which rule scheduled each kernel.

Same contract as dlight's ApplyDefaultSchedule (the first rule that returns a schedule wins;
kernels already scheduled, such as mlcx's hand-written ones, are left alone), plus the
`mlcx.schedule_rule` attribute on every kernel it schedules: tests read it to check that no
kernel of a model is left to dlight's `Fallback`.
"""

from __future__ import annotations

from collections.abc import Sequence

import tvm
from tvm import s_tir, tirx
from tvm.target import Target

from mlcx.passes.prim_funcs import map_prim_funcs

RULE_ATTR = "mlcx.schedule_rule"


def _is_scheduled(func: tirx.PrimFunc) -> bool:
    return bool(func.attrs and func.attrs.get("tirx.is_scheduled", False))


def _schedule(func: tirx.PrimFunc, target: Target, rules: Sequence) -> tirx.PrimFunc | None:
    for rule in rules:
        space = rule.apply(func, target, False)
        if space is None:
            continue
        sch = space if isinstance(space, s_tir.Schedule) else space[0]
        return sch.mod["main"].with_attrs(
            {"tirx.is_scheduled": True, RULE_ATTR: type(rule).__name__}
        )
    return None


def apply_rules(rules: Sequence) -> tvm.transform.Pass:
    def schedule(func: tirx.PrimFunc) -> tirx.PrimFunc | None:
        if _is_scheduled(func):
            return None
        target = func.attrs.get("target") if func.attrs else None
        return _schedule(func, target or Target.current(), rules)

    return map_prim_funcs("mlcx.ApplyRules", schedule)


def schedule_rules_of(mod: tvm.IRModule) -> dict[str, str]:
    """kernel name -> the rule that scheduled it ("mlcx" for hand-written kernels)."""
    out = {}
    for gvar, func in mod.functions_items():
        if isinstance(func, tirx.PrimFunc):
            attrs = func.attrs or {}
            out[gvar.name_hint] = str(attrs.get(RULE_ATTR, "mlcx" if _is_scheduled(func) else ""))
    return out
