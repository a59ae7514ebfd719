"""BERT configs, parsed from config.json once at the edge."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.hf_config import HFConfigReader

# config.json's hidden_act -> the activation the MLP applies
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


@dataclass(frozen=True)
class EncoderConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    max_positions: int
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"  # gelu (erf) or gelu_tanh

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"model config: {name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"model config: hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_heads}"
            )
        if self.max_positions <= 0 or self.type_vocab_size <= 0 or self.layer_norm_eps <= 0:
            raise ValueError("model config: positions, token types and layer_norm_eps must be > 0")
        if self.hidden_act not in ("gelu", "gelu_tanh"):
            raise ValueError(f"model config: hidden_act {self.hidden_act!r} is not gelu")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def from_hf(config: dict[str, Any]) -> EncoderConfig:
    r = HFConfigReader(config, "bert")
    embedding = config.get("position_embedding_type", "absolute")
    if embedding != "absolute":
        raise UnsupportedModelError(
            f"bert: position_embedding_type {embedding!r} is not supported (only absolute)"
        )
    act = r.get("hidden_act", default="gelu")
    if act not in ACTIVATIONS:
        raise UnsupportedModelError(
            f"bert: hidden_act {act!r} is not supported ({', '.join(ACTIVATIONS)})"
        )
    return EncoderConfig(
        vocab_size=r.get("vocab_size", required=True),
        hidden_size=r.get("hidden_size", required=True),
        intermediate_size=r.get("intermediate_size", required=True),
        num_layers=r.get("num_hidden_layers", required=True),
        num_heads=r.get("num_attention_heads", required=True),
        max_positions=r.get("max_position_embeddings", required=True),
        type_vocab_size=r.get("type_vocab_size", default=2),
        layer_norm_eps=float(r.get("layer_norm_eps", default=1e-12)),
        hidden_act=ACTIVATIONS[act],
    )
