"""RoPE scalings as data: each variant is one inverse frequency per feature pair and one scale
on cos/sin, computed here once in numpy from the config's parameters.

`scaling` dicts are what the frontends validated (mlcx/frontends/hf_config.py, the GGUF
readers): a `rope_type` plus that type's numbers. `rope_table` turns one into a `RopeTable`
for a head's rotary features and base; the kernels (mlcx/kernels/rope.py) read the table as
compile-time constants, so every variant shares one TIR formula. Default RoPE has no table:
the kernels keep its closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class RopeTable:
    """Feature pair i turns by position * inv_freq[i]; cos and sin are multiplied by scale."""

    inv_freq: tuple[float, ...]
    scale: float = 1.0


# a variant's inverse frequencies (one per feature pair) and cos/sin scale
Scaled = tuple[np.ndarray, float]


def default_inv_freq(theta: float, rotary_dim: int) -> np.ndarray:
    """theta^(-2i / rotary_dim) for each feature pair i."""
    return 1.0 / theta ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)


def _linear(s: dict[str, Any], inv: np.ndarray, theta: float, dim: int) -> Scaled:
    """Positions divided by `factor`."""
    return inv / float(s["factor"]), 1.0


def _freq_factors(s: dict[str, Any], inv: np.ndarray, theta: float, dim: int) -> Scaled:
    """Each pair's frequency divided by its own factor, as llama.cpp's rope_freqs and
    LongRoPE's factor lists are; cos/sin scaled by `attention_factor`."""
    factors = np.asarray(s["factors"], dtype=np.float64)
    if factors.shape != inv.shape:
        raise ValueError(
            f"RoPE frequency factors: {factors.size} given for {inv.size} feature pairs "
            f"(rotary dim {dim}); the model file is inconsistent"
        )
    return inv / factors, float(s.get("attention_factor", 1.0))


def _llama3(s: dict[str, Any], inv: np.ndarray, theta: float, dim: int) -> Scaled:
    """Llama 3.1: wavelengths longer than original / low_freq_factor are divided by `factor`,
    shorter than original / high_freq_factor kept, and those between blended smoothly."""
    factor, low, high = (float(s[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
    original = float(s["original_max_position_embeddings"])
    wavelen = 2 * math.pi / inv
    smooth = np.clip((original / wavelen - low) / (high - low), 0.0, 1.0)
    blended = (1 - smooth) * inv / factor + smooth * inv
    return blended, 1.0


def _yarn_ramp(s: dict[str, Any], theta: float, dim: int) -> np.ndarray:
    """1 where a feature pair keeps its frequency (extrapolates), 0 where it is interpolated,
    linear between the pairs that turn beta_fast and beta_slow times over the original
    context."""
    original = float(s["original_max_position_embeddings"])

    def pair_of(rotations: float) -> float:
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = pair_of(float(s["beta_fast"])), pair_of(float(s["beta_slow"]))
    if s["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # a step instead of a ramp
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    return 1.0 - ramp


def _yarn(s: dict[str, Any], inv: np.ndarray, theta: float, dim: int) -> Scaled:
    """YaRN: high-frequency pairs keep theirs, low-frequency pairs are divided by `factor`,
    a linear ramp between; cos/sin scaled by `attention_factor`."""
    keep = _yarn_ramp(s, theta, dim)
    mixed = inv / float(s["factor"]) * (1 - keep) + inv * keep
    return mixed, float(s["attention_factor"])


def _proportional(s: dict[str, Any], inv: np.ndarray, theta: float, dim: int) -> Scaled:
    """Gemma 4's global layers: the first partial_rotary_factor of the head's pairs turn at
    the whole head's frequencies, the rest stand still (inverse frequency 0); positions
    divided by `factor`."""
    turning = int(float(s["partial_rotary_factor"]) * dim // 2)
    return np.where(np.arange(inv.size) < turning, inv, 0.0) / float(s.get("factor", 1.0)), 1.0


TableFn = Callable[[dict[str, Any], np.ndarray, float, int], Scaled]

# rope_type -> its table; "longrope" reaches the kernels as "freq_factors" (rope_for_context)
TABLES: dict[str, TableFn] = {
    "linear": _linear,
    "llama3": _llama3,
    "yarn": _yarn,
    "freq_factors": _freq_factors,
    "proportional": _proportional,
}


def rope_table(scaling: dict[str, Any], theta: float, rotary_dim: int) -> RopeTable:
    """The table of a scaled RoPE (not the default, which has none)."""
    kind = scaling.get("rope_type")
    if kind not in TABLES:
        raise ValueError(
            f"RoPE scaling {kind!r} has no frequency table (known: {', '.join(TABLES)}); "
            "LongRoPE must be resolved by rope_for_context first"
        )
    inv, scale = TABLES[kind](scaling, default_inv_freq(theta, rotary_dim), theta, rotary_dim)
    return RopeTable(tuple(float(f) for f in inv), float(scale))


def rope_for_context(scaling: dict[str, Any], context_window: int) -> dict[str, Any]:
    """The RoPE parameters a model compiled for `context_window` tokens uses.

    LongRoPE has short factors for contexts within the pretraining length and long ones past
    it; as llama.cpp does, the compiled context decides (transformers switches per call by the
    sequence's length, which a compiled model with cached keys cannot)."""
    if scaling.get("rope_type") != "longrope":
        return scaling
    original = int(scaling["original_max_position_embeddings"])
    factors = scaling["long_factor" if context_window > original else "short_factor"]
    return {
        "rope_type": "freq_factors",
        "factors": list(factors),
        "attention_factor": scaling["attention_factor"],
    }


def longrope_attention_factor(factor: float, original: int) -> float:
    """The cos/sin scale LongRoPE uses by default for a context `factor` x the original."""
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))


def yarn_attention_factor(factor: float, mscale: float = 0.0, mscale_all_dim: float = 0.0) -> float:
    """YaRN's default cos/sin scale: 0.1 ln(factor) + 1, or the ratio of two such terms
    weighted by mscale and mscale_all_dim where a config gives both (DeepSeek)."""

    def term(weight: float) -> float:
        return 1.0 if factor <= 1 else 0.1 * weight * math.log(factor) + 1.0

    return term(mscale) / term(mscale_all_dim) if mscale and mscale_all_dim else term(1.0)


# the rope types whose `factor` stretches the pretraining context (original * factor). Not
# llama3: Llama 3.2's factor 32 x 8192 would claim 262144 tokens where its config and Meta
# state 131072 (max_position_embeddings, which then decides).
EXTENDING = ("yarn",)


def scaled_context(scaling: dict[str, Any]) -> int:
    """The context a llama3 or YaRN scaling was made for (original x factor); 0 for others."""
    if scaling.get("rope_type") not in EXTENDING:
        return 0
    return int(float(scaling["original_max_position_embeddings"]) * float(scaling["factor"]))
