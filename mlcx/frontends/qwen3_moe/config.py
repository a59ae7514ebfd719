"""Qwen3-MoE configs: Qwen3's, plus the experts (`moe_intermediate_size` wide each)."""

from __future__ import annotations

from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.moe.config import refuse_shared_experts, with_gguf_experts, with_hf_experts
from mlcx.frontends.qwen3.config import from_hf as qwen3_from_hf


def _check_sparse_everywhere(config: dict[str, Any]) -> None:
    """mlcx builds an MoE in every layer, as the released Qwen3-MoE models have."""
    if config.get("mlp_only_layers") or config.get("decoder_sparse_step", 1) != 1:
        raise UnsupportedModelError(
            "qwen3_moe: dense layers among the experts (mlp_only_layers, decoder_sparse_step "
            "!= 1) are not supported"
        )


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    _check_sparse_everywhere(config)
    refuse_shared_experts(config, "qwen3_moe")
    cfg = qwen3_from_hf(config)
    return with_hf_experts(cfg, config, "qwen3_moe", "moe_intermediate_size", renormalize=None)


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    """llama.cpp's `qwen3moe`: its graph always renormalizes the top-k weights."""
    cfg = decoder_config_from_gguf(ckpt, qkv_bias=False, default_rms_eps=1e-6, qk_norm=True)
    return with_gguf_experts(cfg, ckpt, "expert_feed_forward_length", renormalize=True)
