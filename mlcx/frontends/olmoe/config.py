"""OLMoE configs: Llama's layout, q/k norms over all heads, experts `intermediate_size` wide."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.llama_family import decoder_config_from_hf
from mlcx.frontends.moe.config import refuse_shared_experts, with_gguf_experts, with_hf_experts


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    for key in ("clip_qkv", "attention_bias"):
        if config.get(key):
            raise UnsupportedModelError(f"olmoe: {key}={config[key]!r} is not supported")
    refuse_shared_experts(config, "olmoe")
    cfg = decoder_config_from_hf(config, "olmoe", qkv_bias=False, qk_norm=True)
    cfg = dataclasses.replace(cfg, qk_norm_scope="all")
    return with_hf_experts(cfg, config, "olmoe", "intermediate_size", renormalize=None)


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    """llama.cpp's `olmoe` graph does not renormalize the top-k weights."""
    cfg = decoder_config_from_gguf(ckpt, qkv_bias=False, default_rms_eps=1e-5, qk_norm=True)
    cfg = dataclasses.replace(cfg, qk_norm_scope="all")
    return with_gguf_experts(cfg, ckpt, "feed_forward_length", renormalize=False)
