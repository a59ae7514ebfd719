"""`mlcx compile MODEL --target T --quantization Q -o OUT`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mlcx.artifact.config import Artifact
from mlcx.artifact.embedding_config import EMBED_TASK, artifact_task
from mlcx.artifact.kv_budget import kv_budget
from mlcx.cli.options import (
    LINEAR_KERNELS_HELP,
    KVDtype,
    LoraDtype,
    QuantizationName,
    TargetName,
    describe,
)
from mlcx.compile.model import CompileRequest, compile_model
from mlcx.frontends.registry import describe_supported
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.kernels.lora_layout import TARGETS as LORA_TARGETS
from mlcx.kernels.lora_layout import LoraSpec
from mlcx.quantization.schemes import QUANTIZATIONS
from mlcx.targets.base import BuildOptions
from mlcx.targets.registry import TARGETS

STAGES = {
    "export": "Exporting the model graph",
    "build": "Compiling kernels",
    "weights": "Converting weights",
}


def compile_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Hugging Face folder, .gguf file, or preset (smollm2-135m). Architectures: "
            + describe_supported()
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Artifact directory.")],
    target: Annotated[TargetName, typer.Option(help=describe(TARGETS, "summary"))] = "cpu",
    quantization: Annotated[
        QuantizationName | None,
        typer.Option(
            "--quantization",
            "-q",
            help="Default: gguf for GGUF files, else the target's choice. "
            + describe(QUANTIZATIONS, "description"),
        ),
    ] = None,
    context_window: Annotated[
        int | None,
        typer.Option(
            help="Tokens per sequence (default: the model's context; up to original x factor "
            "for llama3 and YaRN RoPE scaling)."
        ),
    ] = None,
    prefill_chunk: Annotated[int, typer.Option(help="Tokens prefilled per step.")] = 512,
    page_size: Annotated[int, typer.Option(help="KV cache page size (tokens).")] = 16,
    kv_dtype: Annotated[
        KVDtype | None,
        typer.Option(
            help="cpu: KV cache dtype (default: the math's). float16 halves the cache's memory "
            "and the bytes decode attention reads, as llama.cpp's default cache does; int8 "
            "(a float32 scale per row, as llama.cpp's q8_0 cache) about halves f16's."
        ),
    ] = None,
    subgroups: Annotated[
        bool,
        typer.Option(
            help="GPU targets: share activations between lanes with subgroup shuffles. "
            "--no-subgroups for WebGPU adapters without the subgroups feature."
        ),
    ] = True,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: all cores).")] = None,
    gpu_arch: Annotated[str | None, typer.Option("--arch", help="GPU arch, e.g. sm_80.")] = None,
    tuning_db: Annotated[
        Path | None, typer.Option(help="Tuning database written by `mlcx tune` (cpu).")
    ] = None,
    linear_kernels: Annotated[
        LinearKernels | None,
        typer.Option(help=LINEAR_KERNELS_HELP + " Default: int16, or the tuning database's."),
    ] = None,
    encoder_linears: Annotated[
        str,
        typer.Option(
            help="An image encoder's linears on cpu: float (float32 FMAs, the default) or "
            "int16 (12-bit codes, about float16's error; faster on AVX512-VNNI)."
        ),
    ] = "float",
    mmproj: Annotated[
        Path | None,
        typer.Option(
            help="llama.cpp's mmproj GGUF for the model's images (Gemma 3, SmolVLM / Idefics3, "
            "Qwen2.5-VL, Qwen3-VL), as llama.cpp takes it."
        ),
    ] = None,
    lora: Annotated[
        Path | None,
        typer.Option(
            help="Merge this LoRA adapter into the weights (a PEFT folder or a GGUF adapter)."
        ),
    ] = None,
    lora_slots: Annotated[
        int | None,
        typer.Option(
            help="Take up to N LoRA adapters at run time, mixed in one batch (`--lora name=DIR` "
            "of generate, chat, serve)."
        ),
    ] = None,
    lora_rank: Annotated[int, typer.Option(help="The largest adapter rank (--lora-slots).")] = 16,
    lora_targets: Annotated[
        str,
        typer.Option(help=f"Projections taking adapters (--lora-slots): {','.join(LORA_TARGETS)}."),
    ] = ",".join(LORA_TARGETS),
    lora_dtype: Annotated[
        LoraDtype | None,
        typer.Option(
            help="How adapters are stored (--lora-slots); default float16 on cpu (half the "
            "bytes a decode step reads), the math's dtype on GPU targets."
        ),
    ] = None,
) -> None:
    """Compile a model into an artifact directory that the mlcx runtime loads."""
    request = CompileRequest(
        model=model,
        target=target.value,
        output=output,
        quantization=quantization.value if quantization else None,
        context_window=context_window,
        prefill_chunk=prefill_chunk,
        page_size=page_size,
        kv_dtype=kv_dtype.value if kv_dtype else None,
        mmproj=mmproj,
        lora=lora,
        lora_slots=_lora_spec(lora_slots, lora_rank, lora_targets, lora_dtype),
        options=BuildOptions(
            num_threads=threads,
            gpu_arch=gpu_arch,
            tuning_db=tuning_db,
            linear_kernels=linear_kernels,
            subgroups=subgroups,
            encoder_linears=encoder_linears,
        ),
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=False) as bar:
        tasks: dict[str, int] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                for task in tasks.values():
                    bar.update(task, completed=bar.tasks[task].total)
                tasks[stage] = bar.add_task(STAGES.get(stage, stage), total=total)
            bar.update(tasks[stage], completed=done, total=total)

        out = compile_model(request, report)
    typer.echo(f"compiled {model} for {target.value} -> {out}")
    if artifact_task(out) == EMBED_TASK:
        typer.echo(f"an embedding model: `mlcx serve {out}` answers POST /v1/embeddings")
    else:
        typer.echo(kv_budget(Artifact(out).config).describe())


def _lora_spec(
    slots: int | None, rank: int, targets: str, dtype: LoraDtype | None
) -> LoraSpec | None:
    if slots is None:
        return None
    names = tuple(t.strip() for t in targets.split(",") if t.strip())
    return LoraSpec(slots, rank, names, dtype.value if dtype else None)


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_command)
