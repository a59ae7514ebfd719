"""`mlcx tune`: measure schedules for a model's untuned CPU kernels into a database.

Bounded by trials and by wall time: each task gets a share of the trials (by calls per
step), tuned in rounds, and the deadline is checked between rounds. Trials already in the
database count toward a task's share, so a rerun resumes where the last one stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import tvm
import tvm.s_tir.meta_schedule as ms
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

from mlcx.artifact.config import Artifact
from mlcx.compile.model import CompileRequest, export_model
from mlcx.errors import ArtifactError
from mlcx.frontends.presets import PRESETS
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.kernels.gpu.tensor_intrinsics import load_tensor_intrinsics
from mlcx.passes.pipeline_cpu import graph_passes
from mlcx.passes.tuning import measure
from mlcx.passes.tuning.records import Record, TuningDb, create_db
from mlcx.passes.tuning.tasks import Task, extract_tasks

Progress = Callable[[str, int, int], None]  # (task, trials done, trials planned)
FAILED = 1e9  # MetaSchedule's run time for a candidate that did not build or run


@dataclass(frozen=True)
class TuneConfig:
    output: Path
    trials: int = 64
    max_seconds: float = 600.0
    # int16/float: tune what the hand-written kernels leave; tvm: the linear layers too
    linear_kernels: LinearKernels = LinearKernels.INT16
    trials_per_round: int = 8

    def __post_init__(self) -> None:
        if self.trials < 1 or self.trials_per_round < 1:
            raise ValueError(f"trials must be positive, not {self.trials}")
        if self.max_seconds <= 0:
            raise ValueError(f"max seconds must be positive, not {self.max_seconds}")
        object.__setattr__(self, "linear_kernels", LinearKernels(self.linear_kernels))


@dataclass(frozen=True)
class TuneSummary:
    database: Path
    tasks: int
    new_trials: int
    records: int
    skipped: tuple[str, ...]
    out_of_time: bool
    seconds: float


def tune_model(req: CompileRequest, config: TuneConfig, progress: Progress | None = None):
    report = progress or (lambda task, done, total: None)
    started = time.perf_counter()
    if req.target != "cpu":
        raise ValueError(f"mlcx tune supports the cpu target only, not {req.target}")
    options = replace(req.options, linear_kernels=config.linear_kernels, tuning_db=None)
    exported = export_model(replace(req, options=options))
    target = exported.tvm_target
    module = fused_module(exported.mod, target, config.linear_kernels)
    tasks, skipped = extract_tasks(module, target)
    db = create_db(config.output, config.linear_kernels)
    deadline = started + config.max_seconds
    before = len(db.records)
    out_of_time = False
    for task, share in zip(tasks, _shares(tasks, config.trials), strict=True):
        if not _tune_task(task, share, target, db, config, deadline, report):
            out_of_time = True
            break
    return TuneSummary(
        config.output,
        len(tasks),
        len(db.records) - before,
        len(db.records),
        tuple(skipped),
        out_of_time,
        time.perf_counter() - started,
    )


def fused_module(mod: tvm.IRModule, target, linear_kernels: LinearKernels) -> tvm.IRModule:
    """The module as the CPU pipeline has it right after operator fusion."""
    passes = (
        graph_passes(target, linear_kernels)
        + cpu_generic.library_dispatch_passes(target)
        + cpu_generic.legalize_passes(target)
    )
    with target:
        return tvm.transform.Sequential(passes)(mod)


def model_of(model: str, quantization: str | None) -> tuple[str, str | None]:
    """(model source, quantization) for a model source or a compiled artifact directory."""
    if not Artifact.is_artifact(model):
        return model, quantization
    config = Artifact(model).config
    source = config.source or (config.model_name if config.model_name in PRESETS else "")
    if not source or (source not in PRESETS and not Path(source).exists()):
        where = f"its model {source} is gone" if source else "it does not record its model"
        raise ArtifactError(
            f"{model} cannot be tuned: {where}; pass the model "
            "(Hugging Face folder, .gguf file or preset) to `mlcx tune` instead"
        )
    return source, quantization or config.quantization


def _shares(tasks: list[Task], trials: int) -> list[int]:
    """Trials per task in proportion to its calls per step, summing to `trials`."""
    total = sum(t.weight for t in tasks) or 1
    shares = [trials * t.weight // total for t in tasks]
    by_weight = sorted(range(len(tasks)), key=lambda i: -tasks[i].weight)
    for i in by_weight[: trials - sum(shares)]:
        shares[i] += 1
    return shares


def _tune_task(task, share, target, db: TuningDb, config, deadline, report) -> bool:
    """Tune until the task has `share` trials; False when the deadline stopped it."""
    done = db.trials(task.key)
    report(task.name, min(done, share), share)
    while done < share:
        if time.perf_counter() >= deadline:
            return False
        batch = min(config.trials_per_round, share - done)
        db.add(_measure(task, target, batch, config.output))
        done = db.trials(task.key)
        report(task.name, min(done, share), share)
    return True


def _measure(task: Task, target, trials: int, work_dir: Path) -> list[Record]:
    load_tensor_intrinsics()  # TuneContext imports them: 40-170 s without this
    context = ms.TuneContext(
        mod=task.workload,
        target=target,
        space_generator=measure.space_generator(),
        search_strategy=measure.SEARCH_STRATEGY,
        task_name=task.name,
        num_threads=1,
    )
    memory = ms.database.MemoryDatabase()
    ms.tune_tasks(
        tasks=[context],
        task_weights=[1.0],
        work_dir=str(work_dir / "logs"),
        max_trials_global=trials,
        num_trials_per_iter=trials,
        builder=measure.InProcessBuilder(),
        runner=measure.InProcessRunner(),
        database=memory,
        cost_model="random",
        task_scheduler="round-robin",
    )
    return [_record(task, r) for r in memory.get_all_tuning_records()]


def _record(task: Task, record) -> Record:
    secs = [float(s) for s in record.run_secs or []]
    mean = sum(secs) / len(secs) if secs else None
    timed = mean if mean is not None and mean < FAILED else None
    return Record(task.name, task.key, _plain(record.trace.as_json()), timed)


def _plain(value):
    """A trace's JSON (TVM strings, ints, floats, arrays) as plain Python values."""
    for kind in (str, bool, int, float):
        if isinstance(value, kind):
            return kind(value)
    if value is None:
        return None
    if hasattr(value, "value"):
        return value.value
    return [_plain(v) for v in value]
