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
    @tvm.transform.module_pass(opt_level=0, name="mlcx.ApplyRules")
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        updates = {}
        for gvar, func in mod.functions_items():
            if isinstance(func, tirx.PrimFunc) and not _is_scheduled(func):
                target = func.attrs.get("target") if func.attrs else None
                scheduled = _schedule(func, target or Target.current(), rules)
                if scheduled is not None:
                    updates[gvar] = scheduled
        for gvar, func in updates.items():
            mod[gvar] = func
        return mod

    return _pass


def schedule_rules_of(mod: tvm.IRModule) -> dict[str, str]:
    """kernel name -> the rule that scheduled it ("mlcx" for hand-written kernels)."""
    out = {}
    for gvar, func in mod.functions_items():
        if isinstance(func, tirx.PrimFunc):
            attrs = func.attrs or {}
            out[gvar.name_hint] = str(attrs.get(RULE_ATTR, "mlcx" if _is_scheduled(func) else ""))
    return out
