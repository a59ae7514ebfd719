"""Building and timing tuning candidates inside this process.

MetaSchedule's LocalBuilder and LocalRunner ship work to worker processes by pickling TIR,
and pickling TIR goes through `tvm.ir.save_json`, which crashes this TVM wheel; the same
crash rules out the evolutionary and replay-trace search strategies and the
compute-location / parallel mutators. What works: random sampling of the design space
(`replay-func`), built and timed here, one candidate at a time (a fair measure on a few
cores anyway).
"""

from __future__ import annotations

import tvm
import tvm.s_tir.meta_schedule as ms
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.builder.local_builder import default_export
from tvm.s_tir.meta_schedule.runner import PyRunner
from tvm.s_tir.meta_schedule.runner.local_runner import (
    LocalRunnerFuture,
    default_alloc_argument,
    default_run_evaluator,
)

SEARCH_STRATEGY = "replay-func"
EVALUATOR = ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=20)


@derived_object
class InProcessBuilder(PyBuilder):
    def build(self, build_inputs):
        return [_build(item) for item in build_inputs]


@derived_object
class InProcessRunner(PyRunner):
    def run(self, runner_inputs):
        return [_run(item) for item in runner_inputs]


def space_generator() -> ms.SpaceGenerator:
    mutators = ms.Mutator.create("llvm")
    usable = {m: p for m, p in mutators.items() if not _crashes(m)}
    return ms.space_generator.PostOrderApply(
        sch_rules="llvm", postprocs="llvm", mutator_probs=usable
    )


def _crashes(mutator) -> bool:
    return isinstance(mutator, ms.mutator.MutateComputeLocation | ms.mutator.MutateParallel)


def _build(item) -> BuilderResult:
    func = item.mod["main"].with_attr("global_symbol", "main")
    try:
        lib = tvm.tirx.build(tvm.IRModule({"main": func}), target=item.target)
        return BuilderResult(default_export(lib), None)
    except Exception as err:  # noqa: BLE001 - a failed candidate is a result, not an error
        return BuilderResult(None, str(err))


def _run(item) -> LocalRunnerFuture:
    try:
        lib = tvm.runtime.load_module(str(item.artifact_path))
        device = tvm.runtime.device(str(item.device_type), 0)
        args_info = tuple(arg.as_json() for arg in item.args_info)
        args = default_alloc_argument(device, args_info, 1)
        return LocalRunnerFuture(res=default_run_evaluator(lib, device, EVALUATOR, args))
    except Exception as err:  # noqa: BLE001 - a failed candidate is a result, not an error
        return LocalRunnerFuture(error_message=str(err))
