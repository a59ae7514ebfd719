"""The metadata every llama.cpp `mmproj` GGUF has, whatever its projector: the projector type,
the `clip.vision.*` keys a converter must have written, and the image tokens the text model's
tokenizer must have for them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint


def need(ckpt: GGUFCheckpoint, key: str) -> Any:
    value = ckpt.meta(f"clip.vision.{key}")
    if value is None:
        raise ModelSourceError(
            f"{ckpt.path}: mmproj metadata clip.vision.{key} is missing; convert the model "
            "again with llama.cpp's convert_hf_to_gguf.py --mmproj"
        )
    return value


def projector_type(ckpt: GGUFCheckpoint) -> str:
    """llama.cpp writes clip.projector_type (newer converters: clip.vision.projector_type)."""
    return str(ckpt.meta("clip.projector_type") or ckpt.meta("clip.vision.projector_type") or "")


def image_tokens(token_id: Callable[[str], int | None], names: tuple[str, ...], family: str):
    """The ids of the family's image tokens in the text model's tokenizer, all of them."""
    ids = {name: token_id(name) for name in names}
    missing = [name for name, i in ids.items() if i is None]
    if missing:
        raise UnsupportedModelError(
            f"the text model's tokenizer lacks {family}'s image tokens {missing}: give the text "
            "GGUF converted from the same model as the mmproj"
        )
    return {name: int(i) for name, i in ids.items()}  # type: ignore[arg-type]
