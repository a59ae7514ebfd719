"""Where Llama's weights live in a Hugging Face checkpoint and in a llama.cpp GGUF file."""

from __future__ import annotations

import numpy as np

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.llama_family import hf_weights as _hf_weights
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.schemes import Role


def hf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return _hf_weights(cfg)


def unpermute_rows(heads: int):
    """Undo llama.cpp's conversion-time reordering of q/k rows for its RoPE layout.

    llama.cpp stores each head's rows as (pairs, 2) interleaved; Hugging Face keeps the two
    halves of a head apart. Works on float rows and on raw block rows alike.
    """

    def apply(rows: np.ndarray) -> np.ndarray:
        n = rows.shape[0]
        grouped = rows.reshape(heads, n // heads // 2, 2, *rows.shape[1:])
        return grouped.swapaxes(1, 2).reshape(rows.shape)

    return apply


def gguf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    specs = [WeightSpec("embed", Role.EMBEDDING, ("token_embd.weight",))]
    for i in range(cfg.num_layers):
        blk, dst = f"blk.{i}.", f"layers.{i}."
        specs += [
            WeightSpec(dst + "input_norm.weight", Role.VECTOR, (blk + "attn_norm.weight",)),
            WeightSpec(
                dst + "attn.qkv",
                Role.LINEAR,
                (blk + "attn_q.weight", blk + "attn_k.weight", blk + "attn_v.weight"),
                (unpermute_rows(cfg.num_heads), unpermute_rows(cfg.num_kv_heads), None),
            ),
            WeightSpec(dst + "attn.o", Role.LINEAR, (blk + "attn_output.weight",)),
            WeightSpec(dst + "post_attn_norm.weight", Role.VECTOR, (blk + "ffn_norm.weight",)),
            WeightSpec(
                dst + "mlp.gate_up", Role.LINEAR, (blk + "ffn_gate.weight", blk + "ffn_up.weight")
            ),
            WeightSpec(dst + "mlp.down", Role.LINEAR, (blk + "ffn_down.weight",)),
        ]
    specs.append(WeightSpec("norm.weight", Role.VECTOR, ("output_norm.weight",)))
    if not cfg.tie_word_embeddings:
        specs.append(WeightSpec("lm_head", Role.LINEAR, ("output.weight",)))
    return specs
