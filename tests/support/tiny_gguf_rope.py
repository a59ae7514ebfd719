"""The RoPE scaling of a tiny HF model written into its GGUF the way llama.cpp's converter
does: YaRN as `rope.scaling.*` metadata, Llama 3.1's llama3 scaling as a `rope_freqs.weight`
tensor of per-pair frequency divisors computed from the HF parameters in float32."""

from __future__ import annotations

import math

import numpy as np
from gguf import RopeScalingType


def _head_dim(cfg) -> int:
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def llama3_rope_freqs(params: dict, head_dim: int) -> np.ndarray:
    """Per pair: 1 for wavelengths under original / high_freq_factor, `factor` over
    original / low_freq_factor, and the reciprocal of the smooth blend between."""
    inv = 1.0 / np.float32(params["rope_theta"]) ** (
        np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)
    )
    factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
    original = params["original_max_position_embeddings"]
    out = []
    for freq in inv:
        wavelen = 2 * math.pi / float(freq)
        smooth = (original / wavelen - low) / (high - low)
        if wavelen < original / high:
            out.append(1.0)
        elif wavelen > original / low:
            out.append(factor)
        else:
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def _llama3(writer, cfg, params: dict) -> None:
    writer.add_tensor("rope_freqs.weight", llama3_rope_freqs(params, _head_dim(cfg)))


# HF rope parameter -> the writer method llama.cpp's converter stores it with, where set
YARN_KEYS = {
    "attention_factor": "add_rope_scaling_yarn_attn_factor",
    "beta_fast": "add_rope_scaling_yarn_beta_fast",
    "beta_slow": "add_rope_scaling_yarn_beta_slow",
}


def _yarn(writer, cfg, params: dict) -> None:
    writer.add_rope_scaling_type(RopeScalingType.YARN)
    writer.add_rope_scaling_factor(params["factor"])
    writer.add_rope_scaling_orig_ctx_len(params["original_max_position_embeddings"])
    for name, method in YARN_KEYS.items():
        if params.get(name) is not None:
            getattr(writer, method)(params[name])


ROPE_EXTRAS = {"llama3": _llama3, "yarn": _yarn}


def write_rope_scaling(writer, cfg) -> None:
    params = cfg.rope_parameters
    kind = params.get("rope_type")
    if kind in ROPE_EXTRAS:
        ROPE_EXTRAS[kind](writer, cfg, params)
