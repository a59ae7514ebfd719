"""What the vision configs of SigLIP-tower families share: the tower's fields, read from a
config.json's `vision_config` and checked once, and the patch grid they make."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from mlcx.errors import UnsupportedModelError

ACTIVATIONS = ("gelu_pytorch_tanh", "gelu_tanh")


def tower_fields(vision: dict[str, Any], family: str) -> dict[str, Any]:
    """The SigLIP tower's fields of a vision config (a KeyError names a missing one)."""
    act = vision.get("hidden_act", "gelu_pytorch_tanh")
    if act not in ACTIVATIONS:
        raise UnsupportedModelError(f"{family} vision: hidden_act {act!r} is not supported")
    return {
        "image_size": int(vision["image_size"]),
        "patch_size": int(vision["patch_size"]),
        "hidden_size": int(vision["hidden_size"]),
        "intermediate_size": int(vision["intermediate_size"]),
        "num_layers": int(vision["num_hidden_layers"]),
        "num_heads": int(vision["num_attention_heads"]),
        "layer_norm_eps": float(vision.get("layer_norm_eps", 1e-6)),
        "num_channels": int(vision.get("num_channels", 3)),
    }


class SiglipGeometry:
    """Mixed into a family's frozen vision config dataclass (which has the tower's fields)."""

    image_size: int
    patch_size: int
    hidden_size: int
    num_heads: int

    def check_tower(self) -> None:
        for name, value in asdict(self).items():  # type: ignore[call-overload]
            if name != "layer_norm_eps" and (not isinstance(value, int) or value < 0):
                raise ValueError(f"vision config: {name} must be a non-negative integer")
        if self.image_size % self.patch_size:
            raise ValueError("vision config: image_size must be a multiple of patch_size")
        if self.hidden_size % self.num_heads:
            raise ValueError("vision config: hidden_size must be a multiple of num_heads")

    @property
    def patches_per_side(self) -> int:
        return self.image_size // self.patch_size

    @property
    def num_patches(self) -> int:
        return self.patches_per_side**2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        return cls(**data)
