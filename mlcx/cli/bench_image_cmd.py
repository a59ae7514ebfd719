"""`mlcx bench image ARTIFACT`: time to encode one image with the artifact's image encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bench_image_command(
    artifact: Annotated[Path, typer.Argument(help="Artifact directory with an image encoder.")],
    reps: Annotated[int, typer.Option(help="Images encoded; times are medians.")] = 5,
) -> None:
    """Preprocessing and encoding time of one image (a fresh image each time)."""
    from mlcx.bench.image_encode import bench_image

    typer.echo("\n".join(bench_image(artifact, reps).lines()))


def register(bench: typer.Typer) -> None:
    bench.command("image")(bench_image_command)
