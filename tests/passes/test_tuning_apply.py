"""A tuning record whose schedule does not fit the kernel it is filed under (another kernel's
trace, as a stale database gives) is passed over with a warning, and the kernel stays as it
was; a record that fits schedules it."""

from __future__ import annotations

import logging

import tvm
from tvm.s_tir import Schedule
from tvm.script import tirx as T

from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.passes.tuning.apply import apply_records
from mlcx.passes.tuning.records import Record, TuningDb
from mlcx.passes.tuning.tasks import is_scheduled, specialize, workload_key


def _kernel(block: str, factor: float):
    """`B = A * factor` over (n, 64), its one block named `block`."""

    @T.prim_func(s_tir=True)
    def kernel(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 64), "float32")
        B = T.match_buffer(b, (n, 64), "float32")
        for i, j in T.grid(n, 64):
            with T.sblock(block):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(factor)

    return kernel


_copy, _scale = _kernel("copy", 1.0), _kernel("scale", 2.0)


def _split_trace(func) -> list:
    """A schedule of `func` (its inner loop split by 16), as a record keeps it."""
    sch = Schedule(tvm.IRModule({"main": func}))
    _, inner = sch.get_loops(sch.get_sblock("copy"))
    sch.split(inner, [4, 16])
    return list(sch.trace.as_json())


def _db(tmp_path, func, trace) -> TuningDb:
    key = workload_key(specialize(func))
    record = Record(task="kernel", workload=key, trace=trace, seconds=1e-6)
    return TuningDb(tmp_path, LinearKernels.TVM, [record])


def test_a_fitting_record_schedules_the_kernel(tmp_path):
    mod, applied = apply_records(
        tvm.IRModule({"k": _copy}), _db(tmp_path, _copy, _split_trace(_copy))
    )
    assert applied == ["k"] and is_scheduled(mod["k"])
    sch = Schedule(mod)
    assert len(sch.get_loops(sch.get_sblock("copy", func_name="k"))) == 3


def test_a_record_that_does_not_fit_is_passed_over(tmp_path, caplog):
    db = _db(tmp_path, _scale, _split_trace(_copy))  # the copy's trace filed under the scale
    with caplog.at_level(logging.WARNING, logger="mlcx"):
        mod, applied = apply_records(tvm.IRModule({"k": _scale}), db)
    assert applied == [] and not is_scheduled(mod["k"])
    assert "tuning record for kernel not applied" in caplog.text
