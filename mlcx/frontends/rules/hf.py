"""The config.json keys every decoder family shares, and generic rules over config.json."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.hf_config import HFConfigReader

HFRule = Callable[[HFConfigReader, DecoderConfig], Mapping[str, Any]]
# a check of what a family refuses, run before anything is read, so its error comes first
HFCheck = Callable[[HFConfigReader], None]


def base_config(r: HFConfigReader) -> DecoderConfig:
    """What every decoder's config.json says, with the aliases real checkpoints use."""
    hidden = r.get("hidden_size", "n_embd", "d_model", required=True)
    heads = r.get("num_attention_heads", "n_head", required=True)
    theta, scaling = r.rope()
    head_dim = r.get("head_dim", default=hidden // heads)
    return DecoderConfig(
        vocab_size=r.get("vocab_size", required=True),
        hidden_size=hidden,
        # a mixture of experts without dense layers (Qwen3.5-MoE) names only its experts' width
        intermediate_size=r.get(
            "intermediate_size", "n_inner", "block_ff_dim", "moe_intermediate_size", required=True
        ),
        num_layers=r.get("num_hidden_layers", "n_layer", required=True),
        num_heads=heads,
        num_kv_heads=r.get("num_key_value_heads", default=heads),
        head_dim=head_dim,
        context_window=r.get(
            "max_position_embeddings", "max_sequence_length", "n_positions", required=True
        ),
        rms_norm_eps=float(r.get("rms_norm_eps", "layer_norm_epsilon", default=1e-6)),
        rope_theta=theta,
        rope_scaling=scaling,
        rotary_dim=r.rotary_dim(head_dim),
        tie_word_embeddings=bool(r.get("tie_word_embeddings", default=False)),
    )


def flag(key: str, *fields: str) -> HFRule:
    """`fields` set to the truth of config key `key` (Llama's attention_bias: q/k/v and o)."""
    return lambda r, cfg: {f: bool(r.config.get(key)) for f in fields}


def tie_default(tied: bool) -> HFRule:
    """The family's default where config.json does not say whether the head is tied."""
    return lambda r, cfg: {"tie_word_embeddings": bool(r.get("tie_word_embeddings", default=tied))}


def refuse(key: str, why: str) -> HFCheck:
    """Refuse a checkpoint whose `key` is set (truthy): `why` says what to do."""

    def check(r: HFConfigReader) -> None:
        if r.config.get(key):
            value = r.config[key]
            raise UnsupportedModelError(f"{r.arch}: {key}={value!r} is not supported; {why}")

    return check


def activation(*names: str, default: str) -> HFRule:
    """hidden_act (or hidden_activation) mapped to the decoder's activation names."""
    known = {
        "silu": "silu",
        "swish": "silu",
        "gelu_pytorch_tanh": "gelu_tanh",
        "gelu_tanh": "gelu_tanh",
    }

    def rule(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
        act = r.get(*names, default=default)
        if act not in known:
            raise UnsupportedModelError(f"{r.arch}: activation {act!r} is not supported")
        return {"hidden_act": known[act]}

    return rule


def scalar_attention(key: str) -> HFRule:
    """Scores scaled by key**-0.5 instead of head_dim**-0.5 (Gemma's query_pre_attn_scalar)."""
    return lambda r, cfg: {"attn_scale": float(r.get(key, default=cfg.head_dim)) ** -0.5}


def softcaps(final: str, attention: str | None = None) -> HFRule:
    """Soft-capping of the final logits and of attention scores where the config sets them."""

    def rule(r: HFConfigReader, cfg: DecoderConfig) -> Mapping[str, Any]:
        caps = {"final_logit_softcap": float(r.config.get(final) or 0.0)}
        if attention:
            caps["attn_logit_softcap"] = float(r.config.get(attention) or 0.0)
        return caps

    return rule
