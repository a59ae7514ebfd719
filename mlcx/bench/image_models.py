"""What `mlcx bench image MODEL` times: an artifact with an image encoder, or a named random
vision model (mlcx.bench.workloads.random_vision) compiled for this CPU into the JIT cache; and the
GGUF + mmproj files llama.cpp's mtmd loads for the same model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlcx.artifact.encoder import read_encoder
from mlcx.bench.peers.mtmd_peer import MtmdFiles
from mlcx.bench.workloads.random_vision import RANDOM_VISION, ensure_random_vision
from mlcx.errors import ArtifactError
from mlcx.targets.base import BuildOptions


@dataclass(frozen=True)
class ImageModel:
    artifact: Path
    files: MtmdFiles | None  # None: no peer asked for


def resolve_image_model(
    model: str,
    gguf: Path | None,
    mmproj: Path | None,
    need_files: bool,
    options: BuildOptions | None = None,
) -> ImageModel:
    """`options`: how a random vision model is compiled (e.g. its encoder's linears)."""
    if model in RANDOM_VISION:
        from mlcx.compile.jit import compile_cached
        from mlcx.compile.model import CompileRequest

        text, proj = ensure_random_vision(model)
        request = CompileRequest(model=str(text), mmproj=proj, options=options or BuildOptions())
        artifact = compile_cached(request)
        gguf, mmproj = gguf or text, mmproj or proj
    else:
        artifact = Path(model)
    config = read_encoder(artifact)
    if config is None:
        choices = ", ".join(RANDOM_VISION)
        raise ArtifactError(
            f"{model} is neither an artifact with an image encoder nor a random vision model "
            f"({choices})"
        )
    if not need_files:
        return ImageModel(artifact, None)
    if gguf is None or mmproj is None:
        raise ValueError(
            "llama.cpp needs the files the artifact was compiled from: pass --gguf TEXT.gguf "
            "and --mmproj MMPROJ.gguf"
        )
    return ImageModel(artifact, MtmdFiles(gguf, mmproj, config.family))
