"""`mlcx bench`: the benchmark group.

`mlcx bench [run] [MODEL] [--target vulkan] --against llama.cpp[-vulkan] [--profile]`
(prefill/decode speed side by side; `run` is the default subcommand), `mlcx bench serve` (load
an OpenAI-compatible server), `mlcx bench web` (wgpu-native vs the browser), `mlcx bench
speculative` (decode with and without speculation) and `mlcx bench profile` (where an engine
step's time goes)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from mlcx.bench.peers.peers import PEERS
from mlcx.bench.run import BenchRequest, run_bench
from mlcx.bench.workloads.workload import DEFAULT_SIZES
from mlcx.cli import (
    bench_embed_cmd,
    bench_image_cmd,
    bench_lora_cmd,
    bench_profile_cmd,
    bench_serve_cmd,
    bench_soak_cmd,
    bench_spec_cmd,
    web_cmd,
)
from mlcx.cli.engine_options import KVDtypeOption
from mlcx.cli.options import LINEAR_KERNELS_HELP, QuantizationName
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.runtime.backends.registry import RUNNERS
from mlcx.targets.registry import TARGETS

Peer = Enum("Peer", {p: p for p in PEERS}, type=str)  # type: ignore[misc]
# Targets whose artifacts this process can run (not the app-only mobile ones).
BenchTarget = Enum(  # type: ignore[misc]
    "BenchTarget", {t: t for t, spec in TARGETS.items() if spec.runtime in RUNNERS}, type=str
)

_CPU, _GPU = DEFAULT_SIZES["cpu"], DEFAULT_SIZES["gpu"]
HELP = (
    "Benchmarks: `run` (default; prefill/decode vs llama.cpp), `serve`, `web`, `speculative`, "
    "`lora`, `profile`, `soak`, `embed`, `image` (time to encode one image)."
)
_SIZES_BY = "the artifact's target, or --target when compiling"


def bench_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Artifact directory, or a model to compile first (preset, .gguf, HF folder, "
            "or a random-weight shape: llama-3.2-1b-random, llama-3.1-8b-random, "
            "olmoe-1b-7b-random, gpt-oss-20b-random, gpt-oss-20b-4l-random, "
            "qwen3.5-2b-random, lfm2-1.2b-random)."
        ),
    ] = "smollm2-135m",
    target: Annotated[
        BenchTarget | None,
        typer.Option(
            help="When compiling MODEL (default cpu). GPU targets run on their device: "
            "webgpu/vulkan through wgpu-native on the best adapter, cuda/metal through TVM."
        ),
    ] = None,
    prompt: Annotated[
        int | None,
        typer.Option(
            help=f"Prompt tokens (fixed ids). Default by {_SIZES_BY}: {_CPU[0]} on cpu, "
            f"{_GPU[0]} on GPU targets."
        ),
    ] = None,
    decode: Annotated[
        int | None,
        typer.Option(
            help=f"Greedy decode tokens. Default by the same target: {_CPU[1]} on cpu, "
            f"{_GPU[1]} on GPU targets."
        ),
    ] = None,
    reps: Annotated[int, typer.Option(help="Runs per engine; speeds are medians.")] = 3,
    threads: Annotated[int | None, typer.Option(help="Threads for every engine.")] = None,
    quantization: Annotated[
        QuantizationName | None, typer.Option("--quantization", "-q", help="When compiling.")
    ] = None,
    against: Annotated[
        list[Peer] | None,
        typer.Option(
            help="Also run this engine on the same GGUF: llama.cpp (llama-cpp-python, CPU), "
            "llama.cpp-vulkan (llama-bench on the same Vulkan adapter) or llama.cpp-cuda "
            "(llama-bench, CUDA graphs on)."
        ),
    ] = None,
    gguf: Annotated[
        Path | None, typer.Option(help="GGUF file for the peer (when MODEL is an artifact).")
    ] = None,
    build_peer: Annotated[
        bool,
        typer.Option(
            help="Build llama.cpp-vulkan or -cuda when missing (scripts/build-llamacpp-vulkan.sh: "
            "20-40 min on 2 cores, installs Debian packages; build-llamacpp-cuda.sh: hours)."
        ),
    ] = False,
    profile: Annotated[
        bool,
        typer.Option(
            help="Also time each kernel of one prefill and one decode step (webgpu/vulkan "
            "artifacts; GPU timestamps where the adapter has them, else wall time per dispatch)."
        ),
    ] = False,
    tuning_db: Annotated[Path | None, typer.Option(help="Tuning database, when compiling.")] = None,
    kv_dtype: KVDtypeOption = None,
    linear_kernels: Annotated[
        LinearKernels | None, typer.Option(help=LINEAR_KERNELS_HELP + " When compiling.")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = False,
) -> None:
    """Measure prefill and decode tokens/s at batch 1 (and compile time, peak memory, and on cpu
    the memory-bandwidth bound on decode); with --against, the peer runs interleaved in the same
    run; with --profile, a per-kernel table of one prefill and one decode step follows."""
    request = BenchRequest(
        model=model,
        target=target.value if target else None,
        prompt_tokens=prompt,
        decode_tokens=decode,
        reps=reps,
        threads=threads,
        quantization=quantization.value if quantization else None,
        against=tuple(p.value for p in against or ()),
        gguf=gguf,
        tuning_db=tuning_db,
        kv_dtype=kv_dtype.value if kv_dtype else None,
        linear_kernels=linear_kernels.value if linear_kernels else None,
        profile=profile,
        build_peer=build_peer,
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
        help=HELP,
        no_args_is_help=False,
    )
    bench.command("run")(bench_command)
    bench_serve_cmd.register(bench)
    web_cmd.register_bench(bench)
    bench_spec_cmd.register(bench)
    bench_lora_cmd.register(bench)
    bench_profile_cmd.register(bench)
    bench_soak_cmd.register(bench)
    bench_embed_cmd.register(bench)
    bench_image_cmd.register(bench)
    app.add_typer(bench, name="bench")
