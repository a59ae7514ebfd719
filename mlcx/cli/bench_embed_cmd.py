"""`mlcx bench embed ARTIFACT`: texts/s of an embedding model."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def bench_embed_command(
    model: Annotated[
        str, typer.Argument(help="Embedding artifact, or an embedding model folder to compile.")
    ],
    texts: Annotated[int, typer.Option(help="Texts per timed run.")] = 256,
    tokens: Annotated[int, typer.Option(help="Tokens per text (fixed ids).")] = 128,
    batch: Annotated[int, typer.Option(help="Texts per call of the model.")] = 8,
    reps: Annotated[int, typer.Option(help="Timed runs; the median is reported.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Embed fixed texts in batches and print texts/s (and tokens/s)."""
    from mlcx.bench.embed import EmbedBenchSpec, run_embed_bench
    from mlcx.compile.jit import resolve_artifact

    spec = EmbedBenchSpec(texts, tokens, batch, reps)
    report = run_embed_bench(resolve_artifact(model, quiet=as_json).path, spec)
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
    else:
        for line in report.lines():
            typer.echo(line)


def register(bench: typer.Typer) -> None:
    """Adds `embed` to the `mlcx bench` group."""
    bench.command("embed")(bench_embed_command)
