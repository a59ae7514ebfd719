"""Idefics3 / SmolVLM's encoder from a llama.cpp `mmproj` GGUF (projector type `idefics3`, what
convert_hf_to_gguf.py --mmproj writes for Idefics3ForConditionalGeneration and
SmolVLMForConditionalGeneration): the tower from `clip.vision.*`, the pixel shuffle from
`clip.vision.projector.scale_factor`, the projection as `mm.model.fc.weight`, and the image
tokens from the text model's tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mlcx.frontends import mmproj_meta, siglip_mmproj
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.idefics3_vision.config import VisionConfig
from mlcx.frontends.idefics3_vision.layout import FAKE, GLOBAL

IMAGE = "<image>"
DEFAULT_SCALE = 2  # the converter's, where config.json has no scale_factor
LANCZOS = 1  # PIL's filter number: llama.cpp, as Idefics3ImageProcessor, resizes with Lanczos
TOWER = "vision_model."
_PROJECTION = {"connector.modality_projection.proj.weight": "mm.model.fc.weight"}


def config_from_mmproj(
    ckpt: GGUFCheckpoint, text_hidden: int, token_id: Callable[[str], int | None]
) -> VisionConfig:
    ids = mmproj_meta.image_tokens(token_id, (IMAGE, FAKE, GLOBAL), "Idefics3")
    return VisionConfig(
        **siglip_mmproj.tower_fields(ckpt),
        scale_factor=int(ckpt.meta("clip.vision.projector.scale_factor") or DEFAULT_SCALE),
        text_hidden_size=text_hidden,
        image_token_id=ids[IMAGE],
    )


def preprocess(ckpt: GGUFCheckpoint, cfg: VisionConfig) -> dict[str, Any]:
    """How llama.cpp's mtmd prepares an image for this projector: the longest edge resized to
    clip.vision.preproc_image_size, tiles of image_size plus the global image, Lanczos (the
    Idefics3 processor's do_image_splitting path). Older files without that key get one
    global tile each (llama.cpp slices those by a generic rule of its own, not followed here)."""
    longest = int(ckpt.meta("clip.vision.preproc_image_size") or 0)
    return {
        "size": cfg.image_size,
        "longest_edge": longest,
        "split": longest > 0,
        "resample": LANCZOS,
    }


def gguf_name(param: str) -> str:
    if param in _PROJECTION:
        return _PROJECTION[param]
    return siglip_mmproj.tower_name(param.removeprefix(TOWER))


def mmproj_arrays(
    params: list[str], ckpt: GGUFCheckpoint, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    return siglip_mmproj.mmproj_arrays(params, ckpt, dtype, gguf_name)
