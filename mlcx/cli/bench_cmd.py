"""`mlcx bench`: the benchmark group.

`mlcx bench [run] [MODEL] --against llama.cpp` (prefill/decode speed side by side; `run` is the
default subcommand), `mlcx bench serve` (load an OpenAI-compatible server) and `mlcx bench web`
(wgpu-native vs the browser)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from mlcx.bench.run import PEERS, BenchRequest, run_bench
from mlcx.bench.workload import Workload
from mlcx.cli import bench_serve_cmd, web_cmd
from mlcx.cli.options import KVDtype, QuantizationName

Peer = Enum("Peer", {p: p for p in PEERS}, type=str)  # type: ignore[misc]


def bench_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Artifact directory, or a model to compile first (preset, .gguf, HF folder, "
            "or llama-3.2-1b-random)."
        ),
    ] = "smollm2-135m",
    prompt: Annotated[int, typer.Option(help="Prompt tokens (fixed ids).")] = 512,
    decode: Annotated[int, typer.Option(help="Greedy decode tokens.")] = 128,
    reps: Annotated[int, typer.Option(help="Runs per engine; speeds are medians.")] = 3,
    threads: Annotated[int | None, typer.Option(help="Threads for every engine.")] = None,
    quantization: Annotated[
        QuantizationName | None, typer.Option("--quantization", "-q", help="When compiling.")
    ] = None,
    against: Annotated[
        list[Peer] | None, typer.Option(help="Also run this engine on the same GGUF.")
    ] = None,
    gguf: Annotated[
        Path | None, typer.Option(help="GGUF file for the peer (when MODEL is an artifact).")
    ] = None,
    tuning_db: Annotated[Path | None, typer.Option(help="Tuning database, when compiling.")] = None,
    kv_dtype: Annotated[
        KVDtype,
        typer.Option(
            help="KV cache dtype of every engine, when compiling (f16: llama.cpp's default)."
        ),
    ] = KVDtype.float16,  # type: ignore[attr-defined]
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = False,
) -> None:
    """Measure prefill and decode tokens/s at batch 1 (and compile time, peak memory, and the
    memory-bandwidth bound on decode); with --against, the peer runs interleaved in the same run."""
    request = BenchRequest(
        model=model,
        workload=Workload(prompt, decode, reps, threads),
        quantization=quantization.value if quantization else None,
        against=tuple(p.value for p in against or ()),
        gguf=gguf,
        tuning_db=tuning_db,
        kv_dtype=kv_dtype.value,
    )
    say = (lambda _msg: None) if json_output else (lambda msg: typer.echo(msg, err=True))
    report = run_bench(request, say)
    typer.echo(report.to_json() if json_output else "\n".join(report.lines()))


class DefaultRunGroup(TyperGroup):
    """A group whose first argument, when it names no subcommand, goes to `run`: so that
    `mlcx bench` and `mlcx bench MODEL --against llama.cpp` need no subcommand."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def register(app: typer.Typer) -> None:
    bench = typer.Typer(
        cls=DefaultRunGroup,
        help="Benchmarks: `run` (default; prefill/decode vs llama.cpp), `serve`, `web`.",
        no_args_is_help=False,
    )
    bench.command("run")(bench_command)
    bench_serve_cmd.register(bench)
    web_cmd.register_bench(bench)
    app.add_typer(bench, name="bench")
