"""Gemma 3's encoder from a llama.cpp `mmproj` GGUF (projector type `gemma3`): the config from
its `clip.vision.*` metadata, the image tokens from the text model's tokenizer, the weights
under llama.cpp's names (its converter already stored the projector norm as 1 + w)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from mlcx.frontends import mmproj_meta, siglip_mmproj
from mlcx.frontends.gemma3_vision.config import VisionConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint

BOI, EOI, IMAGE = "<start_of_image>", "<end_of_image>", "<image_soft_token>"
DEFAULT_POOL = 4  # llama.cpp's default projector scale factor for gemma3
TOWER = "vision_tower."
_PROJECTOR = {
    "multi_modal_projector.mm_soft_emb_norm.weight": "mm.soft_emb_norm.weight",
    "multi_modal_projector.mm_input_projection_weight": "mm.input_projection.weight",
}


def config_from_mmproj(
    ckpt: GGUFCheckpoint, text_hidden: int, token_id: Callable[[str], int | None]
) -> VisionConfig:
    tower = siglip_mmproj.tower_fields(ckpt)
    pool = int(ckpt.meta("clip.vision.projector.scale_factor") or DEFAULT_POOL)
    ids = mmproj_meta.image_tokens(token_id, (BOI, EOI, IMAGE), "Gemma 3")
    return VisionConfig(
        **tower,
        mm_tokens_per_image=(tower["image_size"] // tower["patch_size"] // pool) ** 2,
        text_hidden_size=text_hidden,
        image_token_id=ids[IMAGE],
        boi_token_id=ids[BOI],
        eoi_token_id=ids[EOI],
    )


def gguf_name(param: str) -> str:
    if param in _PROJECTOR:
        return _PROJECTOR[param]
    return siglip_mmproj.tower_name(param.removeprefix(TOWER))


def mmproj_arrays(
    params: list[str], ckpt: GGUFCheckpoint, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    return siglip_mmproj.mmproj_arrays(params, ckpt, dtype, gguf_name)
