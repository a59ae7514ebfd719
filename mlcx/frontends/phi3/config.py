"""Phi-3 configs: Llama's graph with LongRoPE short/long factors, an optional sliding window and
RoPE over part of each head (Phi-4-mini: partial_rotary_factor, GGUF rope.dimension_count)."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.llama_family import decoder_config_from_hf
from mlcx.kernels.rope_scaling import longrope_attention_factor


def _with_window(cfg: DecoderConfig, window: Any) -> DecoderConfig:
    if isinstance(window, int) and 0 < window < cfg.context_window:
        return dataclasses.replace(cfg, sliding_window=window)
    return cfg


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    cfg = decoder_config_from_hf(config, "phi3", qkv_bias=False)
    return _with_window(cfg, config.get("sliding_window"))


def _gguf_longrope(ckpt: GGUFCheckpoint, context: int) -> dict[str, Any]:
    """llama.cpp keeps the factors as tensors and the pretraining length as metadata."""
    original = int(ckpt.arch_meta("rope.scaling.original_context_length", context))
    factors = {
        f"{kind}_factor": ckpt.get(f"rope_factors_{kind}.weight").to_float().tolist()
        for kind in ("short", "long")
    }
    attention = ckpt.arch_meta("rope.scaling.attn_factor")
    if attention is None:
        attention = longrope_attention_factor(context / original, original)
    return {
        "rope_type": "longrope",
        **factors,
        "original_max_position_embeddings": original,
        "attention_factor": float(attention),
    }


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    """From llama.cpp's `phi3.*` metadata and its rope_factors_{short,long} tensors."""
    cfg = decoder_config_from_gguf(ckpt, qkv_bias=False, default_rms_eps=1e-5)
    if "rope_factors_long.weight" in ckpt.names():
        scaling = _gguf_longrope(ckpt, cfg.context_window)
        cfg = dataclasses.replace(cfg, rope_scaling=scaling)
    return _with_window(cfg, ckpt.arch_meta("attention.sliding_window"))
