"""Apply a tuning database while compiling: each untuned kernel with a record gets the
schedule of its fastest record, replayed on the dynamic kernel."""

from __future__ import annotations

import logging

import tvm
from tvm.s_tir import Schedule
from tvm.s_tir.schedule import Trace

from mlcx.passes.tuning.records import TuningDb
from mlcx.passes.tuning.tasks import is_scheduled, specialize, workload_key

log = logging.getLogger(__name__)


def apply_records(mod: tvm.IRModule, db: TuningDb) -> tuple[tvm.IRModule, list[str]]:
    """(module with tuned kernels marked scheduled, names of the kernels tuned)."""
    updates, applied = {}, []
    for gvar, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc) or is_scheduled(func):
            continue
        tuned = _tuned(func, db)
        if tuned is not None:
            updates[gvar] = tuned
            applied.append(gvar.name_hint)
    for gvar, func in updates.items():
        mod[gvar] = func
    return mod, applied


def apply_database(db: TuningDb) -> tvm.transform.Pass:
    @tvm.transform.module_pass(opt_level=0, name="mlcx.ApplyTuningDatabase")
    def _apply(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        mod, applied = apply_records(mod, db)
        log.info("tuning database %s scheduled %d kernels", db.path, len(applied))
        return mod

    return _apply


def _tuned(func: tvm.tirx.PrimFunc, db: TuningDb) -> tvm.tirx.PrimFunc | None:
    workload = specialize(func)
    record = db.best(workload_key(workload)) if workload is not None else None
    if record is None:
        return None
    sch = Schedule(tvm.IRModule({"main": func}))
    try:
        Trace.apply_json_to_schedule(record.trace, sch)
    except RuntimeError as err:  # the trace does not fit the dynamic kernel (a ScheduleError)
        log.warning("tuning record for %s not applied: %s", record.task, err)
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)
