"""The vision side of an Idefics3ForConditionalGeneration config.json, validated once here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.siglip_config import SiglipGeometry, tower_fields


@dataclass(frozen=True)
class VisionConfig(SiglipGeometry):
    image_size: int
    patch_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    layer_norm_eps: float
    scale_factor: int  # pixel shuffle: scale x scale patches become one token
    text_hidden_size: int
    image_token_id: int
    num_channels: int = 3

    def __post_init__(self) -> None:
        self.check_tower()
        if self.scale_factor < 1 or self.patches_per_side % self.scale_factor:
            raise ValueError("vision config: scale_factor must divide the patches a side")

    @property
    def tokens_per_image(self) -> int:
        return self.num_patches // self.scale_factor**2


def from_hf(config: dict[str, Any]) -> VisionConfig:
    vision = config.get("vision_config") or {}
    text = config.get("text_config") or {}
    try:
        return VisionConfig(
            **tower_fields(vision, "idefics3"),
            scale_factor=int(config.get("scale_factor", 2)),
            text_hidden_size=int(text["hidden_size"]),
            image_token_id=int(config["image_token_id"]),
        )
    except (KeyError, TypeError) as err:
        raise UnsupportedModelError(f"idefics3 vision: config.json lacks {err}") from None
