"""Qwen3 configs: Llama's layout with per-head q/k RMSNorm and an explicit head_dim."""

from __future__ import annotations

from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.llama_family import decoder_config_from_hf


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    if config.get("use_sliding_window"):
        raise UnsupportedModelError(
            "qwen3: use_sliding_window=true is not supported; set it to false in config.json "
            "(the released Qwen3 models do not use it)"
        )
    if config.get("attention_bias"):
        # Qwen3's attention_bias also adds a bias to o_proj, which mlcx's layers do not have.
        raise UnsupportedModelError("qwen3: attention_bias=true is not supported")
    return decoder_config_from_hf(config, "qwen3", qkv_bias=False, qk_norm=True)


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    """From llama.cpp's `qwen3.*` metadata (head_dim as `attention.key_length`)."""
    return decoder_config_from_gguf(ckpt, qkv_bias=False, default_rms_eps=1e-6, qk_norm=True)
