"""`mlcx tune MODEL-or-ARTIFACT --trials N -o DB`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mlcx.cli.options import LINEAR_KERNELS_HELP, QuantizationName, TargetName
from mlcx.compile.model import CompileRequest
from mlcx.compile.tune import TuneConfig, model_of, tune_model
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.targets.base import BuildOptions


def tune_command(
    model: Annotated[
        str, typer.Argument(help="Model (folder, .gguf, preset) or an artifact compiled from one.")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Tuning database directory (resumed if present).")
    ],
    target: Annotated[TargetName, typer.Option(help="Only cpu can be tuned.")] = "cpu",
    quantization: Annotated[
        QuantizationName | None, typer.Option("--quantization", "-q", help="As for compile.")
    ] = None,
    trials: Annotated[int, typer.Option(help="Measured candidates, all kernels together.")] = 64,
    max_seconds: Annotated[float, typer.Option(help="Stop starting new rounds after this.")] = 600,
    linear_kernels: Annotated[
        LinearKernels,
        typer.Option(help=LINEAR_KERNELS_HELP + " Compile with the same choice to use it."),
    ] = LinearKernels.INT16,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: all cores).")] = None,
) -> None:
    """Autotune a model's CPU kernels with MetaSchedule; compile with --tuning-db to use it."""
    source, quant = model_of(model, quantization.value if quantization else None)
    request = CompileRequest(
        model=source,
        target=target.value,
        quantization=quant,
        options=BuildOptions(num_threads=threads),
    )
    config = TuneConfig(output, trials, max_seconds, linear_kernels)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn()) as bar:
        rows: dict[str, int] = {}

        def report(task: str, done: int, total: int) -> None:
            if task not in rows:
                rows[task] = bar.add_task(task, total=total)
            bar.update(rows[task], completed=done, total=total)

        summary = tune_model(request, config, report)
    stopped = " (stopped at --max-seconds)" if summary.out_of_time else ""
    typer.echo(
        f"tuned {summary.tasks} kernels in {summary.seconds:.0f} s: {summary.new_trials} new "
        f"trials, {summary.records} in {summary.database}{stopped}"
    )
    if summary.skipped:
        typer.echo(f"not tunable (indexed by token ids or positions): {', '.join(summary.skipped)}")


def register(app: typer.Typer) -> None:
    app.command("tune")(tune_command)
