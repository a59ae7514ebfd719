"""The RoPE scaling of a llama-family GGUF, as the scaling dicts mlcx.kernels.rope_scaling reads.

llama.cpp's converter keeps two kinds: metadata under `{arch}.rope.scaling.*` (linear, YaRN),
and for Llama 3.1's llama3 scaling a `rope_freqs.weight` tensor of per-pair frequency
divisors (computed at conversion from the HF config, whose parameters it does not store).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint, need_arch_meta
from mlcx.kernels.rope_scaling import yarn_attention_factor

ROPE_FREQS = "rope_freqs.weight"


def _none(ckpt: GGUFCheckpoint) -> dict[str, Any]:
    return {}


def _linear(ckpt: GGUFCheckpoint) -> dict[str, Any]:
    return {"rope_type": "linear", "factor": float(need_arch_meta(ckpt, "rope.scaling.factor"))}


def _yarn(ckpt: GGUFCheckpoint) -> dict[str, Any]:
    """transformers' YaRN from the values llama.cpp's converter copies out of the HF config;
    absent ones take transformers' defaults (the converter writes only what the config set).
    `yarn_log_multiplier` is the config's mscale_all_dim, with mscale taken as 1, as llama.cpp
    takes it (Ministral 3, DeepSeek)."""
    if ckpt.arch_meta("rope.scaling.yarn_ext_factor") not in (None, 0.0, 1.0):
        raise UnsupportedModelError(
            f"{ckpt.path}: YaRN with '{ckpt.architecture}.rope.scaling.yarn_ext_factor' is not "
            "supported; compile the Hugging Face folder"
        )
    factor = float(need_arch_meta(ckpt, "rope.scaling.factor"))
    original = ckpt.arch_meta("rope.scaling.original_context_length")
    log_mul = float(ckpt.arch_meta("rope.scaling.yarn_log_multiplier") or 0.0)
    default = yarn_attention_factor(factor, 1.0, log_mul) if log_mul else None
    attention = ckpt.arch_meta("rope.scaling.yarn_attn_factor") or default
    return {
        "rope_type": "yarn",
        "factor": factor,
        "original_max_position_embeddings": int(original or need_arch_meta(ckpt, "context_length")),
        "beta_fast": float(ckpt.arch_meta("rope.scaling.yarn_beta_fast") or 32.0),
        "beta_slow": float(ckpt.arch_meta("rope.scaling.yarn_beta_slow") or 1.0),
        "attention_factor": float(attention or yarn_attention_factor(factor))
        * float(ckpt.arch_meta("rope.scaling.attn_factor", 1)),
        "truncate": True,  # llama.cpp always rounds the ramp's ends outwards
    }


# rope.scaling.type -> the scaling it describes
SCALING_TYPES: dict[str | None, Callable[[GGUFCheckpoint], dict[str, Any]]] = {
    None: _none,
    "none": _none,
    "linear": _linear,
    "yarn": _yarn,
}


def _freq_factors(ckpt: GGUFCheckpoint, rotary_dim: int) -> dict[str, Any]:
    """llama.cpp divides pair i's default frequency by rope_freqs[i]."""
    factors = ckpt.get(ROPE_FREQS).to_float().reshape(-1)
    if factors.size != rotary_dim // 2:
        raise UnsupportedModelError(
            f"{ckpt.path}: {ROPE_FREQS} holds {factors.size} factors for {rotary_dim // 2} "
            "rotary feature pairs; the file is inconsistent, re-convert it"
        )
    return {"rope_type": "freq_factors", "factors": [float(f) for f in factors]}


def gguf_rope_scaling(ckpt: GGUFCheckpoint, rotary_dim: int) -> dict[str, Any]:
    kind = ckpt.arch_meta("rope.scaling.type")
    if kind not in SCALING_TYPES:
        supported = ", ".join(k for k in SCALING_TYPES if k)
        raise UnsupportedModelError(
            f"{ckpt.path} uses RoPE scaling {kind!r}, which mlcx does not read from GGUF "
            f"(supported: {supported}, and rope_freqs); compile the Hugging Face folder instead"
        )
    scaling = SCALING_TYPES[kind](ckpt)
    if ROPE_FREQS not in ckpt.names():
        return scaling
    if scaling:
        raise UnsupportedModelError(
            f"{ckpt.path} has both {ROPE_FREQS} and RoPE scaling {kind!r}; mlcx applies one "
            "of them, compile the Hugging Face folder instead"
        )
    return _freq_factors(ckpt, rotary_dim)
