"""The vision side of a Gemma3ForConditionalGeneration config.json, validated once here."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from mlcx.errors import UnsupportedModelError

_ACTIVATIONS = ("gelu_pytorch_tanh", "gelu_tanh")


@dataclass(frozen=True)
class VisionConfig:
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
        for name, value in asdict(self).items():
            if name != "layer_norm_eps" and (not isinstance(value, int) or value < 0):
                raise ValueError(f"vision config: {name} must be a non-negative integer")
        if self.image_size % self.patch_size:
            raise ValueError("vision config: image_size must be a multiple of patch_size")
        if self.hidden_size % self.num_heads:
            raise ValueError("vision config: hidden_size must be a multiple of num_heads")
        side = math.isqrt(self.mm_tokens_per_image)
        if side * side != self.mm_tokens_per_image or self.patches_per_side % side:
            raise ValueError(
                f"vision config: mm_tokens_per_image ({self.mm_tokens_per_image}) must be a "
                f"square whose side divides the {self.patches_per_side} patches a side"
            )

    @property
    def patches_per_side(self) -> int:
        return self.image_size // self.patch_size

    @property
    def num_patches(self) -> int:
        return self.patches_per_side**2

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VisionConfig:
        return cls(**data)


def from_hf(config: dict[str, Any]) -> VisionConfig:
    vision = config.get("vision_config") or {}
    text = config.get("text_config") or {}
    act = vision.get("hidden_act", "gelu_pytorch_tanh")
    if act not in _ACTIVATIONS:
        raise UnsupportedModelError(f"gemma3 vision: hidden_act {act!r} is not supported")
    if vision.get("vision_use_head"):
        raise UnsupportedModelError("gemma3 vision: a pooling head (vision_use_head) is not used")
    try:
        return VisionConfig(
            image_size=int(vision["image_size"]),
            patch_size=int(vision["patch_size"]),
            hidden_size=int(vision["hidden_size"]),
            intermediate_size=int(vision["intermediate_size"]),
            num_layers=int(vision["num_hidden_layers"]),
            num_heads=int(vision["num_attention_heads"]),
            layer_norm_eps=float(vision.get("layer_norm_eps", 1e-6)),
            mm_tokens_per_image=int(config.get("mm_tokens_per_image", 256)),
            text_hidden_size=int(text["hidden_size"]),
            image_token_id=int(config.get("image_token_index", config.get("image_token_id"))),
            boi_token_id=int(config.get("boi_token_index", config.get("boi_token_id"))),
            eoi_token_id=int(config.get("eoi_token_index", config.get("eoi_token_id"))),
            num_channels=int(vision.get("num_channels", 3)),
        )
    except (KeyError, TypeError) as err:
        raise UnsupportedModelError(f"gemma3 vision: config.json lacks {err}") from None
