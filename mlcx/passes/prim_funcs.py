"""A module pass that offers each PrimFunc to a function and keeps what it returns: the loop
every schedule pass of mlcx runs (CPU loops and experts, GPU rules)."""

from __future__ import annotations

from collections.abc import Callable

import tvm
from tvm import tirx

Schedule = Callable[[tirx.PrimFunc], "tirx.PrimFunc | None"]  # None: left as it is


def map_prim_funcs(name: str, schedule: Schedule) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name=name)
    def _pass(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        updates = {}
        for gvar, func in mod.functions_items():
            if isinstance(func, tirx.PrimFunc):
                scheduled = schedule(func)
                if scheduled is not None:
                    updates[gvar] = scheduled
        for gvar, func in updates.items():
            mod[gvar] = func
        return mod

    return _pass
