"""`mlcx bench soak --url URL --minutes N`: a mixed load for minutes, the server's resident
memory per interval from its /metrics, and whether it falls back to idle."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer


def bench_soak_command(
    url: Annotated[str, typer.Option(help="Server base URL.")] = "http://127.0.0.1:8000",
    minutes: Annotated[float, typer.Option(help="Minutes measured, after the warm-up.")] = 10.0,
    warmup: Annotated[float, typer.Option(help="Minutes of load before measuring.")] = 2.0,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", help="Concurrent clients.")
    ] = 16,
    sample_seconds: Annotated[
        float, typer.Option(help="Seconds between two reads of /metrics.")
    ] = 60.0,
    max_prompt_words: Annotated[
        int, typer.Option(help="Longest prompt, in words (keep it inside the context window).")
    ] = 900,
    model: Annotated[str | None, typer.Option(help="Model name (default: the server's).")] = None,
    api_key: Annotated[
        str | None, typer.Option(help="Bearer token, if the server wants one.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Drive a mixed load (chat and completions, streamed or not, greedy and sampled, stop
    strings, 4 to N-word prompts, clients hanging up) and print the server's RSS per interval,
    requests done and errors, and its state once idle again."""
    from mlcx.bench.soak import SoakSpec, run_soak

    spec = SoakSpec(
        url,
        minutes,
        warmup,
        concurrency,
        sample_seconds,
        max_prompt_words,
        model,
        api_key,
    )
    say = (lambda _line: None) if as_json else typer.echo
    if not as_json:
        typer.echo(f"soak: {concurrency} clients, {warmup:g} min warm-up, {minutes:g} min measured")
    report = asyncio.run(run_soak(spec, say))
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
    else:
        for line in report.lines()[len(report.samples) + 1 :]:
            typer.echo(line)


def register(bench: typer.Typer) -> None:
    """Adds `soak` to the `mlcx bench` group."""
    bench.command("soak")(bench_soak_command)
