"""Llama configs (Llama 2/3, SmolLM, TinyLlama) from config.json or GGUF metadata."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.llama_family import decoder_config_from_hf


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    # attention_bias adds a bias to q, k, v and o alike
    bias = bool(config.get("attention_bias"))
    return decoder_config_from_hf(config, "llama", qkv_bias=bias, o_bias=bias)


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    """Biases where llama.cpp's converter wrote them (`blk.N.attn_q.bias`, `attn_output.bias`)."""
    names = set(ckpt.names())
    cfg = decoder_config_from_gguf(
        ckpt, qkv_bias="blk.0.attn_q.bias" in names, default_rms_eps=1e-5
    )
    return dataclasses.replace(cfg, o_bias="blk.0.attn_output.bias" in names)
