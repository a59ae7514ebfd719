"""The llama.cpp metadata every decoder's GGUF shares, and generic rules over GGUF files.

llama.cpp writes every hyper-parameter under the architecture's own prefix
(`llama.context_length`, `qwen2.rope.freq_base`, ...); `GGUFCheckpoint.arch_meta` adds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint, need_arch_meta
from mlcx.frontends.gguf.rope import gguf_rope_scaling

GGUFRule = Callable[[GGUFCheckpoint, DecoderConfig], Mapping[str, Any]]


def _head_dims(ckpt: GGUFCheckpoint, hidden: int, heads: int) -> tuple[int, int]:
    """(head_dim, rotary_dim) as llama.cpp reads them: `attention.key_length` where written
    (Qwen3 sets head_dim apart from hidden / heads), and `rope.dimension_count`, the features
    of each head RoPE rotates (fewer than head_dim in Phi-4-mini), defaulting to the head."""
    head_dim = int(ckpt.arch_meta("attention.key_length", hidden // heads))
    rotary = int(ckpt.arch_meta("rope.dimension_count", head_dim))
    if rotary <= 0 or rotary % 2 or rotary > head_dim:
        raise ValueError(
            f"{ckpt.path}: '{ckpt.architecture}.rope.dimension_count' is {rotary}; RoPE needs "
            f"an even number of features, at most the head's {head_dim}; the file is "
            "inconsistent, re-convert it"
        )
    return head_dim, rotary


def _first_layer(value: Any) -> int:
    """A value llama.cpp may write per layer: the first attention layer's (the first non-zero:
    a hybrid's state layers have none, LFM2; Gemma 4's full-attention layers differ, and its
    family's rules read theirs)."""
    if isinstance(value, list):
        return next((int(n) for n in value if n), 0)
    return int(value)


def _feed_forward(ckpt: GGUFCheckpoint) -> int:
    """The dense MLP's width; an MoE without dense layers has only its experts' (qwen35moe)."""
    width = ckpt.arch_meta("feed_forward_length") or ckpt.arch_meta("expert_feed_forward_length")
    return _first_layer(width if width is not None else need_arch_meta(ckpt, "feed_forward_length"))


def base_config(ckpt: GGUFCheckpoint, default_rms_eps: float) -> DecoderConfig:
    """What every decoder's GGUF says; `default_rms_eps` is llama.cpp's for the architecture
    where the file leaves it out."""
    hidden = int(need_arch_meta(ckpt, "embedding_length"))
    heads = int(need_arch_meta(ckpt, "attention.head_count"))
    head_dim, rotary = _head_dims(ckpt, hidden, heads)
    tokens = ckpt.meta("tokenizer.ggml.tokens") or []
    return DecoderConfig(
        vocab_size=int(ckpt.arch_meta("vocab_size", len(tokens))),
        hidden_size=hidden,
        intermediate_size=_feed_forward(ckpt),
        num_layers=int(need_arch_meta(ckpt, "block_count")),
        num_heads=heads,
        num_kv_heads=_first_layer(ckpt.arch_meta("attention.head_count_kv", heads)),
        head_dim=head_dim,
        context_window=int(need_arch_meta(ckpt, "context_length")),
        rms_norm_eps=float(ckpt.arch_meta("attention.layer_norm_rms_epsilon", default_rms_eps)),
        rope_theta=float(ckpt.arch_meta("rope.freq_base", 10000.0)),
        rope_scaling=gguf_rope_scaling(ckpt, rotary),
        rotary_dim=rotary,
        tie_word_embeddings="output.weight" not in ckpt.names(),
    )


def biases_from_tensors(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
    """q/k/v and o biases where llama.cpp's converter wrote them (`blk.N.attn_q.bias`, ...)."""
    names = set(ckpt.names())
    return {"qkv_bias": "blk.0.attn_q.bias" in names, "o_bias": "blk.0.attn_output.bias" in names}


def softcaps(ckpt: GGUFCheckpoint, cfg: DecoderConfig) -> Mapping[str, Any]:
    """Final-logit and attention-score soft-capping where the file sets them."""
    return {
        "final_logit_softcap": float(ckpt.arch_meta("final_logit_softcapping") or 0.0),
        "attn_logit_softcap": float(ckpt.arch_meta("attn_logit_softcapping") or 0.0),
    }
