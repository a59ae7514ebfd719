"""Gemma 4's per-layer options (DecoderConfig's, mlcx.frontends.decoder_layers) from config.json
and from llama.cpp's GGUF metadata: the global layers' head geometry and proportional RoPE,
which layers attend over whose pages, keys as values, per-layer MLP widths and inputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.gguf.rope import ROPE_FREQS
from mlcx.frontends.hf_config import HFConfigReader

_GEOMETRY = {"head_dim", "num_key_value_heads"}  # what per_layer_config may set


def kv_sources(full: list[bool], shared: int, arch: str) -> tuple[int, ...]:
    """The last `shared` layers attend over the pages of the last earlier layer of their kind
    (sliding or full), as transformers' kv_sharing_modes and llama.cpp's n_layer_kv_from_start
    decide; () where no layer shares."""
    first = len(full) - shared
    if not shared:
        return ()
    if not 0 < first <= len(full):
        raise UnsupportedModelError(
            f"{arch}: num_kv_shared_layers={shared} of {len(full)} layers leaves no layer "
            "owning its KV cache (an assistant model reading another model's cache)"
        )
    sources = list(range(first))
    for layer in range(first, len(full)):
        owners = [j for j in range(first) if full[j] == full[layer]]
        if not owners:
            raise UnsupportedModelError(
                f"{arch}: shared layer {layer} has no earlier layer of its kind to read"
            )
        sources.append(owners[-1])
    return tuple(sources)


def _derived(cfg: DecoderConfig, sources, k_eq_v: bool, widths: list[int]) -> dict[str, Any]:
    """The fields both sources derive alike from the layer kinds."""
    owners_full = [i for i in cfg.full_attention_layers if not sources or sources[i] == i]
    return {
        "kv_sources": sources,
        "k_eq_v_layers": tuple(owners_full) if k_eq_v else (),
        "layer_intermediate_sizes": tuple(widths) if len(set(widths)) > 1 else (),
    }


def _full(cfg: DecoderConfig) -> list[bool]:
    return [i in cfg.full_attention_layers for i in range(cfg.num_layers)]


def _hf_global_geometry(r: HFConfigReader, cfg: DecoderConfig) -> tuple[int, int]:
    """(head_dim, kv heads) of the global layers: transformers 5.24's per_layer_config, or
    the older global_head_dim / num_global_key_value_heads keys."""
    per_layer = r.config.get("per_layer_config") or {}
    found = set()
    for key, override in per_layer.items():
        layer = int(key)
        if set(override) - _GEOMETRY or layer not in cfg.full_attention_layers:
            raise UnsupportedModelError(
                f"{r.arch}: per_layer_config[{key}] = {override} is not supported (mlcx reads "
                "head_dim and num_key_value_heads of the full-attention layers)"
            )
        found.add((override.get("head_dim", cfg.head_dim), override.get("num_key_value_heads")))
    if len(found) > 1 or (found and len(per_layer) != len(cfg.full_attention_layers)):
        raise UnsupportedModelError(f"{r.arch}: the full-attention layers' geometry differs")
    if found:
        dim, kv = found.pop()
        return int(dim), int(kv or cfg.num_kv_heads)
    kv = r.config.get("num_global_key_value_heads") if r.config.get("attention_k_eq_v") else None
    return int(r.config.get("global_head_dim") or cfg.head_dim), int(kv or cfg.num_kv_heads)


def hf_checks(r: HFConfigReader) -> None:
    if r.config.get("use_bidirectional_attention") == "all":
        raise UnsupportedModelError(
            f"{r.arch}: use_bidirectional_attention='all' is an encoder, not a causal model"
        )
    local = (r.config.get("rope_parameters") or {}).get("sliding_attention") or {}
    if local.get("rope_type", "default") != "default":
        raise UnsupportedModelError(
            f"{r.arch}: sliding layers with {local['rope_type']!r} RoPE are not supported"
        )


def hf_layers(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
    dim, kv = _hf_global_geometry(r, cfg)
    full = _full(cfg)
    sources = kv_sources(full, int(r.config.get("num_kv_shared_layers") or 0), r.arch)
    first = cfg.num_layers - int(r.config.get("num_kv_shared_layers") or 0)
    double = bool(r.config.get("use_double_wide_mlp")) and bool(sources)
    ple = int(r.config.get("hidden_size_per_layer_input") or 0)
    widths = [cfg.intermediate_size * (2 if double and i >= first else 1) for i in range(len(full))]
    return {
        "global_head_dim": dim if dim != cfg.head_dim else 0,
        "global_kv_heads": kv if kv != cfg.num_kv_heads else 0,
        **_derived(cfg, sources, bool(r.config.get("attention_k_eq_v")), widths),
        "per_layer_input_size": ple,
        "per_layer_vocab_size": int(r.get("vocab_size_per_layer_input", required=True))
        if ple
        else 0,
    }


def hf_experts(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
    if not r.config.get("enable_moe_block"):
        return {}
    return {
        "num_experts": int(r.get("num_experts", required=True)),
        "experts_per_token": int(r.get("top_k_experts", required=True)),
        "expert_intermediate_size": int(r.get("moe_intermediate_size", required=True)),
        "norm_topk_prob": True,
        "moe_dense_mlp": True,
    }


def _gguf_rope(ckpt: GGUFCheckpoint, dim: int) -> dict[str, Any]:
    """The global layers' proportional RoPE, which llama.cpp's converter writes as rope_freqs:
    1 for each pair that turns, 1e30 (standing still) for the others."""
    if ROPE_FREQS not in ckpt.names():
        return {}
    factors = [float(f) for f in ckpt.get(ROPE_FREQS).to_float().reshape(-1)]
    turning = sum(f == 1.0 for f in factors)
    if len(factors) != dim // 2 or any(f < 1e20 for f in factors[turning:]):
        raise UnsupportedModelError(
            f"{ckpt.path}: {ROPE_FREQS} {factors} is not Gemma 4's proportional RoPE over "
            f"{dim // 2} feature pairs; re-convert the model"
        )
    return {"rope_type": "proportional", "partial_rotary_factor": turning / len(factors)}


def _per_layer(ckpt: GGUFCheckpoint, key: str, layers: int) -> list[int]:
    value = ckpt.arch_meta(key)
    return [int(v) for v in value] if isinstance(value, list) else [int(value)] * layers


def gguf_layers(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
    """llama.cpp writes the global layers' head width as key_length, the others' as
    key_length_swa; kv heads and MLP widths per layer where they differ."""
    full = _full(cfg)
    glob = int(ckpt.arch_meta("attention.key_length", cfg.head_dim))
    local = int(ckpt.arch_meta("attention.key_length_swa", glob))
    rotary = int(ckpt.arch_meta("rope.dimension_count_swa", local))
    kv = _per_layer(ckpt, "attention.head_count_kv", cfg.num_layers)
    sources = kv_sources(full, int(ckpt.arch_meta("attention.shared_kv_layers", 0)), "gemma4")
    names = set(ckpt.names())
    own_full = [i for i in range(len(full)) if full[i] and (not sources or sources[i] == i)]
    k_eq_v = bool(own_full) and all(f"blk.{i}.attn_v.weight" not in names for i in own_full)
    global_kv = {kv[i] for i in range(len(full)) if full[i]}
    if len(global_kv) > 1 or len({kv[i] for i in range(len(full)) if not full[i]}) > 1:
        raise UnsupportedModelError(f"{ckpt.path}: kv heads differ among layers of one kind")
    glob_kv = global_kv.pop() if global_kv else kv[0]
    plain = {"head_dim": local, "rotary_dim": rotary, "num_kv_heads": kv[0]}
    widths = _per_layer(ckpt, "feed_forward_length", cfg.num_layers)
    ple = int(ckpt.arch_meta("embedding_length_per_layer_input", 0) or 0)
    return {
        **plain,
        "rope_scaling": _gguf_rope(ckpt, glob),
        "global_head_dim": glob if glob != local else 0,
        "global_kv_heads": glob_kv if glob_kv != kv[0] else 0,
        **_derived(cfg, sources, k_eq_v, widths),
        "per_layer_input_size": ple,
        "per_layer_vocab_size": ckpt.get("per_layer_token_embd.weight").shape[0] if ple else 0,
    }
