"""The vision side of a Qwen2.5-VL or Qwen3-VL config.json, validated once here.

The two towers differ by options, named after what they do: the norm (RMSNorm or LayerNorm),
the MLP (SwiGLU or GELU), window attention in the layers not listed as full (Qwen2.5-VL), a
learned square grid of position embeddings resampled to each image (Qwen3-VL), a bias on the
patch projection, and deepstack mergers after some layers (Qwen3-VL)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from mlcx.errors import UnsupportedModelError

ACTIVATIONS = {"silu": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_tanh": "gelu_tanh"}


@dataclass(frozen=True)
class VisionConfig:
    patch_size: int
    temporal_patch_size: int
    merge_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    text_hidden_size: int  # the merger's output (out_hidden_size)
    image_token_id: int
    rope_theta: float = 10000.0
    norm: str = "rms"  # "rms" (Qwen2.5-VL) or "layer" (Qwen3-VL)
    mlp: str = "swiglu"  # "swiglu" (gate/up/down) or "gelu" (fc1/fc2)
    act: str = "silu"  # the MLP's activation: silu or gelu_tanh
    window_size: int = 0  # pixels a side of the attention windows (0: every layer is full)
    full_layers: tuple[int, ...] = ()  # layers attending over the whole image
    position_grid: int = 0  # side of the learned position embedding grid (0: none)
    patch_bias: bool = False
    deepstack_layers: tuple[int, ...] = ()  # layers whose output a deepstack merger reads
    num_channels: int = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "full_layers", tuple(self.full_layers))
        object.__setattr__(self, "deepstack_layers", tuple(self.deepstack_layers))
        sizes = (self.patch_size, self.merge_size, self.hidden_size, self.num_layers)
        if min(*sizes, self.num_heads, self.temporal_patch_size) < 1:
            raise ValueError(f"qwen vision config: sizes must be positive: {self}")
        if self.hidden_size % self.num_heads or (self.hidden_size // self.num_heads) % 4:
            raise ValueError("qwen vision config: head_dim must be a multiple of 4 (2-D RoPE)")
        if self.norm not in ("rms", "layer") or self.mlp not in ("swiglu", "gelu"):
            raise ValueError(f"qwen vision config: norm {self.norm!r} / mlp {self.mlp!r}")
        if self.window_size and self.window_size % (self.patch_size * self.merge_size):
            raise ValueError("qwen vision config: window_size must be whole merged patches")
        bad = [i for i in (*self.full_layers, *self.deepstack_layers) if i >= self.num_layers]
        if bad:
            raise ValueError(f"qwen vision config: layers {bad} are past the {self.num_layers}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def factor(self) -> int:
        """Pixels a side of one merged token: images are resized to multiples of it."""
        return self.patch_size * self.merge_size

    @property
    def window_tokens(self) -> int:
        """Merged tokens a side of an attention window (0: no windows)."""
        return self.window_size // self.factor

    @property
    def patch_features(self) -> int:
        """Features of one patch as the encoder takes it: channels x patch x patch (the
        temporal copies of a still image are folded into the weights)."""
        return self.num_channels * self.patch_size**2

    @property
    def out_blocks(self) -> int:
        """Blocks of text_hidden_size in each image row: the merger's, then each deepstack's."""
        return 1 + len(self.deepstack_layers)

    def windowed(self, layer: int) -> bool:
        return bool(self.window_size) and layer not in self.full_layers

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VisionConfig:
        return cls(**data)


def _common(vision: dict[str, Any], config: dict[str, Any], family: str) -> dict[str, Any]:
    act = vision.get("hidden_act", "silu")
    if act not in ACTIVATIONS:
        raise UnsupportedModelError(f"{family} vision: hidden_act {act!r} is not supported")
    rope = vision.get("rope_parameters") or {}
    return {
        "patch_size": int(vision.get("patch_size", 14)),
        "temporal_patch_size": int(vision.get("temporal_patch_size", 2)),
        "merge_size": int(vision.get("spatial_merge_size", 2)),
        "hidden_size": int(vision["hidden_size"]),
        "intermediate_size": int(vision["intermediate_size"]),
        "num_layers": int(vision.get("depth", vision.get("num_hidden_layers"))),
        "num_heads": int(vision.get("num_heads", vision.get("num_attention_heads"))),
        "text_hidden_size": int(vision["out_hidden_size"]),
        "image_token_id": int(config["image_token_id"]),
        "rope_theta": float(rope.get("rope_theta", 10000.0)),
        "act": ACTIVATIONS[act],
        "num_channels": int(vision.get("in_channels", vision.get("in_chans", 3))),
    }


def from_hf_qwen2_5(config: dict[str, Any]) -> VisionConfig:
    vision = config.get("vision_config") or {}
    try:
        return VisionConfig(
            **_common(vision, config, "qwen2_5_vl"),
            window_size=int(vision.get("window_size", 112)),
            full_layers=tuple(vision.get("fullatt_block_indexes", (7, 15, 23, 31))),
        )
    except (KeyError, TypeError) as err:
        raise UnsupportedModelError(f"qwen2_5_vl vision: config.json lacks {err}") from None


def from_hf_qwen3(config: dict[str, Any]) -> VisionConfig:
    vision = config.get("vision_config") or {}
    try:
        grid = math.isqrt(int(vision.get("num_position_embeddings", 2304)))
        return VisionConfig(
            **_common(vision, config, "qwen3_vl"),
            norm="layer",
            mlp="gelu",
            position_grid=grid,
            patch_bias=True,
            deepstack_layers=tuple(vision.get("deepstack_visual_indexes", ())),
        )
    except (KeyError, TypeError) as err:
        raise UnsupportedModelError(f"qwen3_vl vision: config.json lacks {err}") from None
