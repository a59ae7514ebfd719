"""`mlcx bench lora MODEL --lora NAME=DIR ... [--random-adapters K] --batch 8`: decode tok/s
of a batch mixing adapters against the model without adapter slots, in the same run."""

from __future__ import annotations

from typing import Annotated

import typer

from mlcx.cli.engine_options import EngineOptions, with_engine_options
from mlcx.cli.options import KVDtype


def bench_lora_command(
    model: Annotated[
        str, typer.Argument(help="A model to compile (preset, .gguf, HF folder), not an artifact.")
    ] = "smollm2-135m",
    batch: Annotated[int, typer.Option(help="Streams decoded together.")] = 8,
    random_adapters: Annotated[
        int,
        typer.Option(help="Add K random adapters of the model's shapes (q, v, MLP; rank 8)."),
    ] = 0,
    max_tokens: Annotated[int, typer.Option(help="Tokens per stream.")] = 128,
    reps: Annotated[int, typer.Option(help="Runs per engine; speeds are medians.")] = 3,
    *,
    engine: EngineOptions,
) -> None:
    """Decode tok/s of --batch streams running the --lora adapters (stream i the adapter
    i mod k, all in one batch) against the same streams on the model compiled without adapter
    slots, and on the model with slots but no adapter: both compiled here (KV cache float16
    unless --kv-dtype), measured alternately, the ratios reported."""
    from mlcx.artifact.config import Artifact
    from mlcx.bench.lora import run_lora_bench
    from mlcx.bench.workloads.random_lora import random_adapter

    if Artifact.is_artifact(model):
        raise typer.BadParameter(
            "give the model, not an artifact: it is compiled twice", param_hint="MODEL"
        )
    randoms = tuple(
        (f"random{i}", str(random_adapter(model, seed=i))) for i in range(random_adapters)
    )
    adapters = engine.adapters + randoms
    if not adapters:
        raise typer.BadParameter("give adapters to mix: --lora NAME=DIR or --random-adapters K")
    kv_dtype = engine.kv_dtype or KVDtype("float16")
    base = EngineOptions(kv_dtype=kv_dtype).artifact(model)
    lora = [f"{name}={path}" for name, path in adapters]
    with_slots = EngineOptions(kv_dtype=kv_dtype, lora=lora).artifact(model)
    say = lambda m: typer.echo(m, err=True)  # noqa: E731
    report = run_lora_bench(
        str(base.path), str(with_slots.path), adapters, batch, reps, max_tokens, say
    )
    typer.echo("\n".join(report.lines()))


def register(app: typer.Typer) -> None:
    app.command("lora")(with_engine_options(bench_lora_command))
