"""Mixtral configs: Mistral's, plus the experts (`intermediate_size` wide each)."""

from __future__ import annotations

from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.mistral.config import from_hf as mistral_from_hf
from mlcx.frontends.moe.config import refuse_shared_experts, with_gguf_experts, with_hf_experts


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    refuse_shared_experts(config, "mixtral")
    # Mixtral always divides the chosen experts' weights by their sum (no norm_topk_prob key)
    return with_hf_experts(
        mistral_from_hf(config), config, "mixtral", "intermediate_size", renormalize=True
    )


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    cfg = decoder_config_from_gguf(ckpt, qkv_bias=False, default_rms_eps=1e-5)
    return with_gguf_experts(cfg, ckpt, "feed_forward_length", renormalize=True)
