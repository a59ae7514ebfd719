"""Hybrid models' layer kinds and state-layer geometry (DecoderConfig.layer_kinds, delta_*,
conv_*), from config.json or GGUF metadata: Qwen3.5's Gated DeltaNet layers beside gated
attention, LFM2's short convolutions beside attention."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint, need_arch_meta
from mlcx.frontends.hf_config import HFConfigReader
from mlcx.frontends.hybrid_config import ATTENTION, CONV, DELTA

FULL_ATTENTION_INTERVAL = 4  # Qwen3.5's default: every 4th layer attends
_QWEN35_KINDS = {"linear_attention": DELTA, "full_attention": ATTENTION}
_LFM2_KINDS = {"conv": CONV, "full_attention": ATTENTION}


def _kinds(names: list[str], known: dict[str, str], arch: str) -> tuple[str, ...]:
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise UnsupportedModelError(f"{arch}: layer types {unknown} are not among {list(known)}")
    return tuple(known[n] for n in names)


def _interval(layers: int, every: int) -> tuple[str, ...]:
    return tuple(ATTENTION if (i + 1) % every == 0 else DELTA for i in range(layers))


def hf_delta_layers(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
    """Qwen3.5: `layer_types` (or every `full_attention_interval`-th layer attends), the linear
    attention's heads, and attention output gates."""
    names = r.config.get("layer_types")
    if names:
        kinds = _kinds(list(names), _QWEN35_KINDS, r.arch)
    else:
        every = int(r.get("full_attention_interval", default=FULL_ATTENTION_INTERVAL))
        kinds = _interval(cfg.num_layers, every)
    return {
        "layer_kinds": kinds,
        "delta_k_heads": int(r.get("linear_num_key_heads", required=True)),
        "delta_v_heads": int(r.get("linear_num_value_heads", required=True)),
        "delta_k_dim": int(r.get("linear_key_head_dim", required=True)),
        "delta_v_dim": int(r.get("linear_value_head_dim", required=True)),
        "delta_conv_kernel": int(r.get("linear_conv_kernel_dim", default=4)),
        "attn_output_gate": True,
    }


def gguf_delta_layers(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
    """llama.cpp's qwen35 metadata. Its block count includes the multi-token-prediction
    layers (`nextn_predict_layers`), stored after the trunk: mlcx runs the trunk alone. The
    file's v heads are tiled over the k heads (llama.cpp's converter reorders them)."""
    layers = cfg.num_layers - int(ckpt.arch_meta("nextn_predict_layers", 0))
    recurrent = ckpt.arch_meta("attention.recurrent_layers")
    if recurrent is not None:
        kinds = tuple(DELTA if r else ATTENTION for r in list(recurrent)[:layers])
    else:
        kinds = _interval(layers, int(ckpt.arch_meta("full_attention_interval", 4)))
    k_heads = int(need_arch_meta(ckpt, "ssm.group_count"))
    v_heads = int(need_arch_meta(ckpt, "ssm.time_step_rank"))
    return {
        "num_layers": layers,
        "layer_kinds": kinds,
        "delta_k_heads": k_heads,
        "delta_v_heads": v_heads,
        "delta_k_dim": int(need_arch_meta(ckpt, "ssm.state_size")),
        "delta_v_dim": int(need_arch_meta(ckpt, "ssm.inner_size")) // v_heads,
        "delta_conv_kernel": int(need_arch_meta(ckpt, "ssm.conv_kernel")),
        "delta_head_order": "tiled" if v_heads != k_heads else "grouped",
        "attn_output_gate": True,
    }


def hf_conv_layers(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
    """LFM2: `layer_types`, or `full_attn_idxs` (the attention layers), and the convolution's
    taps (`conv_L_cache`) and biases."""
    names = r.config.get("layer_types")
    if names:
        kinds = _kinds(list(names), _LFM2_KINDS, r.arch)
    else:
        full = set(r.config.get("full_attn_idxs") or range(cfg.num_layers))
        kinds = tuple(ATTENTION if i in full else CONV for i in range(cfg.num_layers))
    return {
        "layer_kinds": kinds,
        "conv_kernel": int(r.get("conv_L_cache", default=3)),
        "conv_bias": bool(r.config.get("conv_bias", False)),
    }


def gguf_conv_layers(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
    """llama.cpp's lfm2 metadata: a layer without KV heads is a short convolution."""
    kv = ckpt.arch_meta("attention.head_count_kv")
    if not isinstance(kv, list):
        raise UnsupportedModelError(
            f"{ckpt.path}: lfm2 file without per-layer KV head counts "
            f"('{ckpt.architecture}.attention.head_count_kv' as a list); re-convert it"
        )
    kinds = tuple(ATTENTION if n else CONV for n in kv)
    first_conv = kinds.index(CONV) if CONV in kinds else 0
    return {
        "layer_kinds": kinds,
        "conv_kernel": int(need_arch_meta(ckpt, "shortconv.l_cache")),
        "conv_bias": f"blk.{first_conv}.shortconv.in_proj.bias" in ckpt.names(),
    }
