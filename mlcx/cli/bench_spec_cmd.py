"""`mlcx bench speculative MODEL --speculative ngram|draft`: decode tok/s with and without
speculative decoding in the same run, on an echo task, at each concurrency."""

from __future__ import annotations

from typing import Annotated

import typer

from mlcx.cli.engine_options import EngineOptions, with_engine_options


def bench_speculative_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Artifact directory, or a model to compile first (preset, .gguf, HF folder, "
            "or llama-3.2-1b-random)."
        ),
    ] = "smollm2-135m",
    concurrency: Annotated[
        list[int] | None,
        typer.Option(
            "--concurrency", "-c", help="Concurrent streams (repeat to compare; default 1 and 16)."
        ),
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Tokens per stream at most.")] = None,
    reps: Annotated[int, typer.Option(help="Runs per engine; speeds are medians.")] = 3,
    threads: Annotated[int | None, typer.Option(help="Threads (default: all cores).")] = None,
    draft_blocks: Annotated[
        tuple[int, int] | None,
        typer.Option(
            help="With --speculative draft: the draft is MODEL's GGUF cut to its first N and "
            "last M blocks (FIRST LAST)."
        ),
    ] = None,
    *,
    engine: EngineOptions,
) -> None:
    """Decode tok/s with and without speculative decoding on an echo task (rewrite a paragraph
    with one word changed), greedy through the whole engine, and the acceptance rate, at each
    -c; greedy outputs must be equal. Needs --speculative."""
    from mlcx.bench.speculative import MAX_TOKENS, SpecBenchRequest, run_spec_request

    if engine.speculative is None:
        raise typer.BadParameter("give the proposer to measure", param_hint="--speculative")
    spec = SpecBenchRequest(
        model,
        engine.speculative.value,
        engine.draft,
        draft_blocks,
        engine.num_speculative,
        tuple(concurrency or (1, 16)),
        reps,
        engine.kv_dtype_name or "float16",
        threads,
        max_tokens or MAX_TOKENS,
        engine.max_batch,
    )
    typer.echo("\n".join(run_spec_request(spec, lambda m: typer.echo(m, err=True)).lines()))


def register(bench: typer.Typer) -> None:
    """Adds `speculative` to the `mlcx bench` group."""
    bench.command("speculative")(with_engine_options(bench_speculative_command))
