"""Gemma 3 text configs (`gemma3_text`, Gemma3ForCausalLM) from config.json or GGUF metadata."""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.config import decoder_config_from_gguf
from mlcx.frontends.llama_family import decoder_config_from_hf

log = logging.getLogger(__name__)
_ACTIVATIONS = {"gelu_pytorch_tanh": "gelu_tanh", "gelu_tanh": "gelu_tanh"}
DEFAULT_PATTERN = 6  # every 6th layer global, the others local (Gemma 3's layout)
LOCAL_THETA = 10000.0


def _global_layers(layer_types: list[str]) -> tuple[int, ...]:
    kinds = {"sliding_attention", "full_attention"}
    if not set(layer_types) <= kinds:
        raise UnsupportedModelError(f"gemma3: layer_types must be among {sorted(kinds)}")
    return tuple(i for i, kind in enumerate(layer_types) if kind == "full_attention")


def _pattern_layers(num_layers: int, pattern: int) -> list[str]:
    return [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(num_layers)
    ]


def _gemma(cfg: DecoderConfig, window: Any, global_layers, local_theta, attn_scale, caps):
    if caps[1]:
        # Gemma 3 dropped Gemma 2's score softcapping for q/k norms: transformers and llama.cpp
        # ignore the key, and so does mlcx (the attention kernels could apply it)
        log.info("gemma3: attn_logit_softcapping %s ignored, as transformers does", caps[1])
    window = window if isinstance(window, int) and 0 < window < cfg.context_window else 0
    return dataclasses.replace(
        cfg,
        sliding_window=window,
        full_attention_layers=tuple(global_layers),
        local_rope_theta=float(local_theta),
        hidden_act="gelu_tanh",
        embed_scale=math.sqrt(cfg.hidden_size),
        attn_scale=float(attn_scale),
        final_logit_softcap=float(caps[0] or 0.0),
    )


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    act = config.get("hidden_activation") or config.get("hidden_act") or "gelu_pytorch_tanh"
    if act not in _ACTIVATIONS:
        raise UnsupportedModelError(f"gemma3: hidden_activation {act!r} is not supported")
    params = config.get("rope_parameters") or {}
    local = params.get("sliding_attention") or {}
    # transformers 5 nests the RoPE of each layer kind; the global one is the model's own
    flat = {**config, "rope_parameters": params.get("full_attention", params)}
    cfg = decoder_config_from_hf(flat, "gemma3", qkv_bias=False, tie_default=True, qk_norm=True)
    layers = config.get("layer_types") or _pattern_layers(
        cfg.num_layers, int(config.get("sliding_window_pattern") or DEFAULT_PATTERN)
    )
    local_theta = local.get("rope_theta") or config.get("rope_local_base_freq") or LOCAL_THETA
    scalar = config.get("query_pre_attn_scalar") or cfg.head_dim
    return _gemma(
        cfg,
        config.get("sliding_window"),
        _global_layers(list(layers)),
        local_theta,
        scalar**-0.5,
        (config.get("final_logit_softcapping"), config.get("attn_logit_softcapping")),
    )


def _gguf_attn_scale(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> float:
    """llama.cpp has no key for query_pre_attn_scalar: head_dim, except Gemma 3 27B (62 layers),
    which scales by hidden / heads, as llama.cpp does."""
    scale = ckpt.arch_meta("attention.scale")
    if scale is not None:
        return float(scale)
    scalar = cfg.hidden_size // cfg.num_heads if cfg.num_layers == 62 else cfg.head_dim
    return scalar**-0.5


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    """From llama.cpp's `gemma3.*` metadata; the local/global pattern from
    `attention.sliding_window_pattern` (true: local) where written, else every 6th global."""
    cfg = decoder_config_from_gguf(ckpt, qkv_bias=False, default_rms_eps=1e-6, qk_norm=True)
    pattern = ckpt.arch_meta("attention.sliding_window_pattern")
    if isinstance(pattern, list):
        layers = ["sliding_attention" if local else "full_attention" for local in pattern]
    else:
        layers = _pattern_layers(cfg.num_layers, int(pattern or DEFAULT_PATTERN))
    return _gemma(
        cfg,
        ckpt.arch_meta("attention.sliding_window"),
        _global_layers(layers),
        ckpt.arch_meta("rope.freq_base_swa", LOCAL_THETA),
        _gguf_attn_scale(ckpt, cfg),
        (ckpt.arch_meta("final_logit_softcapping"), ckpt.arch_meta("attn_logit_softcapping")),
    )
