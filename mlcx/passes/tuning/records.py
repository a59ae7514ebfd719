"""The tuning database directory: `mlcx-tuning.json` plus one JSON line per measured trial.

MetaSchedule's own JSONDatabase cannot be used with this TVM wheel: serializing TIR to JSON
(`tvm.ir.save_json`) crashes the process. Records therefore keep the trace (which serializes
to plain JSON) and a structural hash of the specialized kernel, which is recomputed from the
model on every tune and compile.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from mlcx.errors import MlcxError
from mlcx.formats import FORMAT_VERSION, check_format_version
from mlcx.kernels.cpu.kernel_config import LinearKernels

MANIFEST = "mlcx-tuning.json"
RECORDS = "records.jsonl"


class TuningDbError(MlcxError):
    """A tuning database directory is missing or malformed."""


@dataclass(frozen=True)
class Record:
    task: str
    workload: str  # structural hash of the specialized kernel
    trace: list
    seconds: float | None  # mean run time; None when the candidate failed to build or run

    def to_json(self) -> str:
        data = {"task": self.task, "workload": self.workload, "trace": self.trace}
        return json.dumps({**data, "seconds": self.seconds})


@dataclass
class TuningDb:
    path: Path
    linear_kernels: LinearKernels  # the module the records were measured on
    records: list[Record] = field(default_factory=list)

    def trials(self, workload: str) -> int:
        return sum(1 for r in self.records if r.workload == workload)

    def best(self, workload: str) -> Record | None:
        timed = [r for r in self.records if r.workload == workload and r.seconds is not None]
        return min(timed, key=lambda r: r.seconds, default=None)

    def add(self, records: list[Record]) -> None:
        with open(self.path / RECORDS, "a") as out:
            for record in records:
                out.write(record.to_json() + "\n")
        self.records.extend(records)


def create_db(path: Path, linear_kernels: LinearKernels) -> TuningDb:
    """Open the database at path for tuning, creating it; its linear kernels must not change."""
    if (path / MANIFEST).exists():
        db = open_db(path)
        if db.linear_kernels is not linear_kernels:
            raise TuningDbError(
                f"{path} was tuned with --linear-kernels {db.linear_kernels.value}; "
                f"use a new output directory to tune with {linear_kernels.value}"
            )
        return db
    path.mkdir(parents=True, exist_ok=True)
    manifest = {"format_version": FORMAT_VERSION, "linear_kernels": linear_kernels.value}
    (path / MANIFEST).write_text(json.dumps(manifest, indent=2))
    (path / RECORDS).touch()
    return TuningDb(path, linear_kernels)


def resolve_linear_kernels(
    requested: LinearKernels | None, tuning_db: Path | None
) -> LinearKernels:
    """The linear kernels of a compile: the requested ones, else the tuning database's (its
    records only match a module built the same way), else int16."""
    tuned = open_db(tuning_db).linear_kernels if tuning_db is not None else None
    if requested is not None and tuned is not None and requested is not tuned:
        raise ValueError(
            f"--linear-kernels {requested.value} disagrees with the tuning database {tuning_db}, "
            f"tuned with {tuned.value}; drop one of the two options"
        )
    return requested or tuned or LinearKernels.INT16


def open_db(path: Path) -> TuningDb:
    manifest = path / MANIFEST
    if not manifest.is_file():
        raise TuningDbError(
            f"{path} is not an mlcx tuning database ({MANIFEST} missing); "
            "create one with `mlcx tune MODEL -o DIR`"
        )
    try:
        meta = json.loads(manifest.read_text())
        check_format_version(meta, str(manifest), "tune again")
        records = _read_records(path / RECORDS)
        return TuningDb(path, _linear_kernels(meta), records)
    except (ValueError, KeyError, TypeError, OSError) as err:
        raise TuningDbError(
            f"tuning database {path} is malformed ({err}); rerun `mlcx tune` into a new directory"
        ) from None


def _read_records(path: Path) -> list[Record]:
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            data = json.loads(line)
            seconds = data["seconds"]
            if seconds is not None and not math.isfinite(seconds):
                raise ValueError(f"bad run time {seconds}")
            records.append(Record(data["task"], data["workload"], data["trace"], seconds))
    return records


def _linear_kernels(meta: dict) -> LinearKernels:
    if "linear_kernels" in meta:
        return LinearKernels(meta["linear_kernels"])
    # databases written before the choice had one name: hand-written linears on or off
    return LinearKernels.INT16 if meta["hand_linears"] else LinearKernels.TVM
