"""`mlcx bench profile MODEL`: where an engine step's time goes, in process, at each
concurrency (schedule, page tables, forward, sample, detokenize)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer

from mlcx.cli.engine_options import EngineOptions, with_engine_options

CAPACITY_TOKENS = 2048  # the sequence length the KV capacity line counts in


def bench_profile_command(
    model: Annotated[
        str, typer.Argument(help="Artifact dir, or a model to compile for this CPU first.")
    ] = "smollm2-135m",
    concurrency: Annotated[
        list[int] | None,
        typer.Option("--concurrency", "-c", help="Concurrent streams (repeat to compare)."),
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Tokens per stream.")] = 64,
    prompt_tokens: Annotated[
        int | None,
        typer.Option(
            help="Prompts of this many random tokens, and only the decode steps after them "
            "counted (decoding at that context)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    *,
    engine: EngineOptions,
) -> None:
    """Run MODEL's engine in process at each -c and print where a step's time goes (schedule,
    page tables, forward, sample, detokenize), greedy with EOS ignored."""
    from mlcx.bench.measure.kv_capacity import kv_capacity
    from mlcx.bench.measure.step_profile import profile_steps
    from mlcx.runtime.core.engine import Engine

    levels = concurrency or [1]
    artifact = engine.artifact(model)
    core = Engine(artifact, engine.engine_config(default_batch=max(levels)))
    if not as_json:
        budget = core.config.kv_cache_bytes
        print(kv_capacity(artifact.config, budget, CAPACITY_TOKENS).line())
    profile_steps(core, 1, 2)  # first-call costs stay out of the numbers
    for level in levels:
        breakdown = profile_steps(core, level, max_tokens, prompt_tokens)
        print(json.dumps(asdict(breakdown)) if as_json else "\n".join(breakdown.lines()))


def register(bench: typer.Typer) -> None:
    """Adds `profile` to the `mlcx bench` group."""
    bench.command("profile")(with_engine_options(bench_profile_command))
