"""Which layers attend through a sliding window, and their RoPE, from config.json or GGUF.

Every layer is windowed except DecoderConfig.full_attention_layers; a window as long as the
context is none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.hf_config import HFConfigReader
from mlcx.frontends.rules.gguf import GGUFRule
from mlcx.frontends.rules.hf import HFRule

_KINDS = ("sliding_attention", "full_attention")


def _window(value: Any, cfg: DecoderConfig) -> Mapping[str, Any]:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value < cfg.context_window
    return {"sliding_window": value if ok else 0}


def _full_layers(kinds: list[str], arch: str) -> tuple[int, ...]:
    if not set(kinds) <= set(_KINDS):
        raise UnsupportedModelError(f"{arch}: layer_types must be among {list(_KINDS)}")
    return tuple(i for i, kind in enumerate(kinds) if kind == "full_attention")


def _pattern(num_layers: int, every: int) -> list[str]:
    """Every `every`-th layer global, the others local (Gemma 3: every 6th; Gemma 2: 2nd)."""
    return [_KINDS[(i + 1) % every == 0] for i in range(num_layers)]


def hf_window(key: str = "sliding_window") -> HFRule:
    """Every layer sees its last `key` keys (Mistral, Phi-3) unless layer types say otherwise."""
    return lambda r, cfg: _window(r.config.get(key), cfg)


def hf_layer_types(every: int) -> HFRule:
    """`layer_types` where the config lists them, else `sliding_window_pattern` (or `every`);
    nothing for a config with neither layer types nor a window (OLMo 2 beside OLMo 3)."""

    def rule(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
        if r.config.get("layer_types") is None and r.config.get("sliding_window") is None:
            return {}
        kinds = r.config.get("layer_types") or _pattern(
            cfg.num_layers, int(r.config.get("sliding_window_pattern") or every)
        )
        return {"full_attention_layers": _full_layers(list(kinds), r.arch)}

    return rule


def hf_local_rope(default_theta: float | None = None) -> HFRule:
    """The RoPE base of the windowed layers, which take no RoPE scaling: transformers 5's
    `rope_parameters` per layer kind, or `rope_local_base_freq`, else `default_theta` (None:
    the global base). Nothing where the model has no local and global layers."""

    def rule(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
        if not cfg.full_attention_layers:
            return {}
        local = (r.config.get("rope_parameters") or {}).get("sliding_attention") or {}
        default = cfg.rope_theta if default_theta is None else default_theta
        theta = local.get("rope_theta") or r.config.get("rope_local_base_freq") or default
        return {"local_rope_theta": float(theta)}

    return rule


def gguf_window(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
    return _window(ckpt.arch_meta("attention.sliding_window"), cfg)


def gguf_layer_types(every: int) -> GGUFRule:
    """`attention.sliding_window_pattern`: a bool per layer (true: windowed), or a period."""

    def rule(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
        pattern = ckpt.arch_meta("attention.sliding_window_pattern")
        if pattern is None and ckpt.arch_meta("attention.sliding_window") is None:
            return {}
        if isinstance(pattern, list):
            kinds = [_KINDS[not local] for local in pattern]
        else:
            kinds = _pattern(cfg.num_layers, int(pattern or every))
        return {"full_attention_layers": _full_layers(kinds, ckpt.architecture)}

    return rule


def gguf_local_rope(default_theta: float | None = None) -> GGUFRule:
    """`rope.freq_base_swa`, as hf_local_rope."""

    def rule(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
        if not cfg.full_attention_layers:
            return {}
        default = cfg.rope_theta if default_theta is None else default_theta
        return {"local_rope_theta": float(ckpt.arch_meta("rope.freq_base_swa", default))}

    return rule
