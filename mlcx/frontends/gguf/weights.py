"""Where llama-family GGUF files (llama, qwen2, qwen3) keep their weights: llama.cpp's names.

Architectures differ in three ways here: whether llama.cpp's converter reordered the q/k rows
for its interleaved RoPE (llama yes; qwen2 and qwen3 no, llama.cpp runs them with NeoX-style
RoPE, as Hugging Face does), whether the q/k/v projections carry biases (`blk.N.attn_q.bias`,
...), and whether each q/k head is RMS-normalized (`blk.N.attn_q_norm.weight`, qwen3).
"""

from __future__ import annotations

import numpy as np

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.weight_spec import RowTransform, WeightSpec
from mlcx.quantization.schemes import Role


def unpermute_rows(heads: int) -> RowTransform:
    """Undo llama.cpp's conversion-time reordering of q/k rows for its RoPE layout.

    llama.cpp stores each head's rows as (pairs, 2) interleaved; Hugging Face keeps the two
    halves of a head apart. Works on float rows and on raw block rows alike.
    """

    def apply(rows: np.ndarray) -> np.ndarray:
        n = rows.shape[0]
        grouped = rows.reshape(heads, n // heads // 2, 2, *rows.shape[1:])
        return grouped.swapaxes(1, 2).reshape(rows.shape)

    return apply


def _qkv(cfg: DecoderConfig, blk: str, dst: str, rope_permuted: bool) -> list[WeightSpec]:
    names = tuple(f"{blk}attn_{p}.weight" for p in "qkv")
    transforms: tuple[RowTransform | None, ...] = ()
    if rope_permuted:
        transforms = (unpermute_rows(cfg.num_heads), unpermute_rows(cfg.num_kv_heads), None)
    specs = [WeightSpec(dst + "attn.qkv", Role.LINEAR, names, transforms)]
    if cfg.qkv_bias:
        biases = tuple(f"{blk}attn_{p}.bias" for p in "qkv")
        specs.append(WeightSpec(dst + "attn.qkv.bias", Role.VECTOR, biases, transforms))
    if cfg.qk_norm:
        specs += [
            WeightSpec(f"{dst}attn.{p}_norm.weight", Role.VECTOR, (f"{blk}attn_{p}_norm.weight",))
            for p in "qk"
        ]
    return specs


def _o_bias(cfg: DecoderConfig, blk: str, dst: str) -> list[WeightSpec]:
    if not cfg.o_bias:
        return []
    return [WeightSpec(dst + "attn.o.bias", Role.VECTOR, (blk + "attn_output.bias",))]


def _layer(cfg: DecoderConfig, i: int, rope_permuted: bool) -> list[WeightSpec]:
    blk, dst = f"blk.{i}.", f"layers.{i}."
    return [
        WeightSpec(dst + "input_norm.weight", Role.VECTOR, (blk + "attn_norm.weight",)),
        *_qkv(cfg, blk, dst, rope_permuted),
        WeightSpec(dst + "attn.o", Role.LINEAR, (blk + "attn_output.weight",)),
        *_o_bias(cfg, blk, dst),
        WeightSpec(dst + "post_attn_norm.weight", Role.VECTOR, (blk + "ffn_norm.weight",)),
        WeightSpec(
            dst + "mlp.gate_up", Role.LINEAR, (blk + "ffn_gate.weight", blk + "ffn_up.weight")
        ),
        WeightSpec(dst + "mlp.down", Role.LINEAR, (blk + "ffn_down.weight",)),
    ]


def decoder_weights(cfg: DecoderConfig, rope_permuted: bool) -> list[WeightSpec]:
    specs = [WeightSpec("embed", Role.EMBEDDING, ("token_embd.weight",))]
    for i in range(cfg.num_layers):
        specs += _layer(cfg, i, rope_permuted)
    specs.append(WeightSpec("norm.weight", Role.VECTOR, ("output_norm.weight",)))
    if not cfg.tie_word_embeddings:
        specs.append(WeightSpec("lm_head", Role.LINEAR, ("output.weight",)))
    return specs
