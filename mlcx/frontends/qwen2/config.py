"""Qwen2 configs: Llama's layout with biases on the q/k/v projections."""

from __future__ import annotations

import logging
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.llama_family import decoder_config_from_hf

log = logging.getLogger(__name__)


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    if config.get("use_sliding_window"):
        raise UnsupportedModelError(
            "qwen2: use_sliding_window=true is not supported; set it to false in config.json "
            "(the released Qwen2 models do not use it)"
        )
    return decoder_config_from_hf(config, "qwen2", qkv_bias=True)


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    """From llama.cpp's `qwen2.*` metadata (Qwen2, Qwen2.5 and their GGUF conversions)."""
    return decoder_config_from_gguf(ckpt, qkv_bias=True, default_rms_eps=1e-6)
