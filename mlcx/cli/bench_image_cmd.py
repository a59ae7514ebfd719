"""`mlcx bench image MODEL`: time to encode one image with an artifact's image encoder, and
with llama.cpp's mtmd on the same GGUF + mmproj files (`--against llama.cpp`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

PEERS = ("llama.cpp",)
ENCODER_LINEARS_HELP = (
    "A random vision model's encoder linears on cpu: float (float32 FMAs) or int16 (12-bit "
    "codes, about float16's error; faster on AVX512-VNNI)."
)


def bench_image_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Artifact directory with an image encoder, or a random vision model "
            "(gemma3-4b-vision-random, qwen2.5vl-7b-vision-random), written and compiled for "
            "this CPU on first use."
        ),
    ],
    reps: Annotated[int, typer.Option(help="Images encoded; times are medians.")] = 5,
    against: Annotated[
        str | None, typer.Option(help="Also time llama.cpp's mtmd on the same files.")
    ] = None,
    gguf: Annotated[
        Path | None, typer.Option(help="The text GGUF the artifact was compiled from (peer).")
    ] = None,
    mmproj: Annotated[
        Path | None, typer.Option(help="The mmproj GGUF the artifact was compiled from (peer).")
    ] = None,
    build_peer: Annotated[
        bool, typer.Option(help="Build llama.cpp (15-25 min) when it is missing.")
    ] = False,
    encoder_linears: Annotated[str, typer.Option(help=ENCODER_LINEARS_HELP)] = "float",
) -> None:
    """Preprocessing and encoding time of one image (a fresh image each time)."""
    from mlcx.bench.image_encode import PeerRun, bench_image
    from mlcx.bench.image_models import resolve_image_model
    from mlcx.targets.base import BuildOptions

    if against is not None and against not in PEERS:
        raise typer.BadParameter(f"--against takes {', '.join(PEERS)}, not {against!r}")
    options = BuildOptions(encoder_linears=encoder_linears)
    resolved = resolve_image_model(model, gguf, mmproj, against is not None, options)
    peer = None
    if against is not None:
        peer = PeerRun(resolved.files, os.cpu_count() or 1, build_peer)  # type: ignore[arg-type]
    typer.echo("\n".join(bench_image(resolved.artifact, reps, peer, typer.echo).lines()))


def register(bench: typer.Typer) -> None:
    bench.command("image")(bench_image_command)
