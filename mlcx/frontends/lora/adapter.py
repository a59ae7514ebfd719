"""A LoRA adapter as mlcx reads it: per (layer, weight slot) one low-rank pair in Hugging
Face's orientation and row order, its scale folded in, so that the slot's weight becomes
W + B @ A (times a request's scale).

Slots are the weight-name table's (mlcx.frontends.weight_names): q, k, v, o, gate, up, down,
or a family's fused qkv / gate_up."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mlcx.errors import ModelSourceError
from mlcx.frontends.decoder_config import DecoderConfig

# the slots an adapter may change: the attention and MLP projections of every layer
SLOTS = ("q", "k", "v", "qkv", "o", "gate", "up", "gate_up", "down")


@dataclass(frozen=True)
class LoraPair:
    a: np.ndarray  # float32 [rank, in_features]
    b: np.ndarray  # float32 [out_features, rank], the adapter's scale folded in

    def __post_init__(self) -> None:
        if self.a.ndim != 2 or self.b.ndim != 2 or self.a.shape[0] != self.b.shape[1]:
            raise ModelSourceError(
                f"LoRA A {self.a.shape} and B {self.b.shape} do not make a low-rank pair "
                "(A is [rank, in], B is [out, rank])"
            )

    @property
    def rank(self) -> int:
        return self.a.shape[0]

    def delta(self) -> np.ndarray:
        """B @ A: what the pair adds to its weight [out, in]."""
        return self.b @ self.a


@dataclass(frozen=True)
class LoraAdapter:
    source: Path
    pairs: dict[tuple[int, str], LoraPair] = field(default_factory=dict)  # (layer, slot)

    @property
    def rank(self) -> int:
        return max(p.rank for p in self.pairs.values())

    @property
    def slots(self) -> frozenset[str]:
        return frozenset(slot for _, slot in self.pairs)


def check_shape(pair: LoraPair, rows: int, cols: int, where: str) -> LoraPair:
    """`pair` if it fits a [rows, cols] weight, else ModelSourceError naming `where`."""
    if pair.b.shape[0] != rows or pair.a.shape[1] != cols:
        raise ModelSourceError(
            f"{where}: the LoRA pair is for a [{pair.b.shape[0]}, {pair.a.shape[1]}] weight, "
            f"but the model's is [{rows}, {cols}]; the adapter is for another model"
        )
    return pair


def slot_shape(cfg: DecoderConfig, slot: str, layer: int) -> tuple[int, int]:
    """[out, in] of the weight in `slot` of `layer` (layers may differ: Gemma 4's)."""
    dim = cfg.layer_head_dim(layer)
    q, kv = cfg.num_heads * dim, cfg.layer_kv_heads(layer) * dim
    hidden, inter = cfg.hidden_size, cfg.layer_intermediate(layer)
    return {
        "q": (q, hidden),
        "k": (kv, hidden),
        "v": (kv, hidden),
        "qkv": (q + 2 * kv, hidden),
        "o": (hidden, q),
        "gate": (inter, hidden),
        "up": (inter, hidden),
        "gate_up": (2 * inter, hidden),
        "down": (hidden, inter),
    }[slot]
