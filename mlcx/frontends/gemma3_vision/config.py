"""The vision side of a Gemma3ForConditionalGeneration config.json, validated once here."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.siglip_config import SiglipGeometry, tower_fields


@dataclass(frozen=True)
class VisionConfig(SiglipGeometry):
    """SigLIP tower + projector geometry and the image tokens of the prompt."""

    image_size: int
    patch_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    layer_norm_eps: float
    mm_tokens_per_image: int
    text_hidden_size: int
    image_token_id: int
    boi_token_id: int
    eoi_token_id: int
    num_channels: int = 3

    def __post_init__(self) -> None:
        self.check_tower()
        side = math.isqrt(self.mm_tokens_per_image)
        if side * side != self.mm_tokens_per_image or self.patches_per_side % side:
            raise ValueError(
                f"vision config: mm_tokens_per_image ({self.mm_tokens_per_image}) must be a "
                f"square whose side divides the {self.patches_per_side} patches a side"
            )

    @property
    def tokens_per_side(self) -> int:
        return math.isqrt(self.mm_tokens_per_image)

    @property
    def tokens_per_image(self) -> int:
        return self.mm_tokens_per_image

    @property
    def pool(self) -> int:
        """The average-pooling kernel (and stride) over the patch grid."""
        return self.patches_per_side // self.tokens_per_side


def from_hf(config: dict[str, Any]) -> VisionConfig:
    vision = config.get("vision_config") or {}
    text = config.get("text_config") or {}
    if vision.get("vision_use_head"):
        raise UnsupportedModelError("gemma3 vision: a pooling head (vision_use_head) is not used")
    try:
        return VisionConfig(
            **tower_fields(vision, "gemma3"),
            mm_tokens_per_image=int(config.get("mm_tokens_per_image", 256)),
            text_hidden_size=int(text["hidden_size"]),
            image_token_id=int(config.get("image_token_index", config.get("image_token_id"))),
            boi_token_id=int(config.get("boi_token_index", config.get("boi_token_id"))),
            eoi_token_id=int(config.get("eoi_token_index", config.get("eoi_token_id"))),
        )
    except (KeyError, TypeError) as err:
        raise UnsupportedModelError(f"gemma3 vision: config.json lacks {err}") from None
