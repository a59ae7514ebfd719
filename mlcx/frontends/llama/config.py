"""Llama configs (Llama 2/3, SmolLM, TinyLlama) from config.json or GGUF metadata."""

from __future__ import annotations

from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.llama_family import decoder_config_from_hf


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    return decoder_config_from_hf(config, "llama", qkv_bias=bool(config.get("attention_bias")))


def from_gguf(ckpt: GGUFCheckpoint) -> DecoderConfig:
    def need(key: str) -> Any:
        value = ckpt.arch_meta(key)
        if value is None:
            raise UnsupportedModelError(f"{ckpt.path}: GGUF metadata 'llama.{key}' is missing")
        return value

    if "rope_freqs.weight" in ckpt.names():
        raise UnsupportedModelError(
            f"{ckpt.path} carries per-dimension RoPE factors (rope_freqs), which mlcx does not "
            "read from GGUF yet; compile the Hugging Face folder of this model instead"
        )
    hidden = int(need("embedding_length"))
    heads = int(need("attention.head_count"))
    tokens = ckpt.meta("tokenizer.ggml.tokens") or []
    return DecoderConfig(
        vocab_size=int(ckpt.arch_meta("vocab_size", len(tokens))),
        hidden_size=hidden,
        intermediate_size=int(need("feed_forward_length")),
        num_layers=int(need("block_count")),
        num_heads=heads,
        num_kv_heads=int(ckpt.arch_meta("attention.head_count_kv", heads)),
        head_dim=int(ckpt.arch_meta("rope.dimension_count", hidden // heads)),
        context_window=int(need("context_length")),
        rms_norm_eps=float(ckpt.arch_meta("attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(ckpt.arch_meta("rope.freq_base", 10000.0)),
        tie_word_embeddings="output.weight" not in ckpt.names(),
    )
