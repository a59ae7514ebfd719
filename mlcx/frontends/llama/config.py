"""Llama configs (Llama 2/3, SmolLM, TinyLlama) from config.json or GGUF metadata."""

from __future__ import annotations

from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.llama_family import decoder_config_from_hf


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    return decoder_config_from_hf(config, "llama", qkv_bias=bool(config.get("attention_bias")))


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    return decoder_config_from_gguf(ckpt, qkv_bias=False, default_rms_eps=1e-5)
