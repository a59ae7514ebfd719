"""The vision side of an Idefics3ForConditionalGeneration config.json, validated once here."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mlcx.errors import UnsupportedModelError

_ACTIVATIONS = ("gelu_pytorch_tanh", "gelu_tanh")


@dataclass(frozen=True)
class VisionConfig:
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
        for name, value in asdict(self).items():
            if name != "layer_norm_eps" and (not isinstance(value, int) or value < 0):
                raise ValueError(f"vision config: {name} must be a non-negative integer")
        if self.image_size % self.patch_size or self.hidden_size % self.num_heads:
            raise ValueError("vision config: image_size % patch_size and heads must divide")
        if self.scale_factor < 1 or self.patches_per_side % self.scale_factor:
            raise ValueError("vision config: scale_factor must divide the patches a side")

    @property
    def patches_per_side(self) -> int:
        return self.image_size // self.patch_size

    @property
    def num_patches(self) -> int:
        return self.patches_per_side**2

    @property
    def tokens_per_image(self) -> int:
        return self.num_patches // self.scale_factor**2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VisionConfig:
        return cls(**data)


def from_hf(config: dict[str, Any]) -> VisionConfig:
    vision = config.get("vision_config") or {}
    text = config.get("text_config") or {}
    if vision.get("hidden_act", "gelu_pytorch_tanh") not in _ACTIVATIONS:
        raise UnsupportedModelError(f"idefics3 vision: hidden_act {vision.get('hidden_act')!r}")
    try:
        return VisionConfig(
            image_size=int(vision["image_size"]),
            patch_size=int(vision["patch_size"]),
            hidden_size=int(vision["hidden_size"]),
            intermediate_size=int(vision["intermediate_size"]),
            num_layers=int(vision["num_hidden_layers"]),
            num_heads=int(vision["num_attention_heads"]),
            layer_norm_eps=float(vision.get("layer_norm_eps", 1e-6)),
            scale_factor=int(config.get("scale_factor", 2)),
            text_hidden_size=int(text["hidden_size"]),
            image_token_id=int(config["image_token_id"]),
            num_channels=int(vision.get("num_channels", 3)),
        )
    except (KeyError, TypeError) as err:
        raise UnsupportedModelError(f"idefics3 vision: config.json lacks {err}") from None
