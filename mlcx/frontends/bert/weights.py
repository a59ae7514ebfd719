"""Where a BERT encoder's weights live in a Hugging Face checkpoint (BertModel names, under
`prefix`: "" for a BertModel, "bert." for checkpoints saved with a task head)."""

from __future__ import annotations

from mlcx.frontends.bert.config import EncoderConfig
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.schemes import Role


def _norm(dst: str, src: str) -> list[WeightSpec]:
    return [
        WeightSpec(f"{dst}.weight", Role.VECTOR, (f"{src}.weight",)),
        WeightSpec(f"{dst}.bias", Role.VECTOR, (f"{src}.bias",)),
    ]


def _linear(dst: str, *srcs: str) -> list[WeightSpec]:
    return [
        WeightSpec(dst, Role.LINEAR, tuple(f"{s}.weight" for s in srcs)),
        WeightSpec(f"{dst}.bias", Role.VECTOR, tuple(f"{s}.bias" for s in srcs)),
    ]


def _layer(i: int, prefix: str) -> list[WeightSpec]:
    src, dst = f"{prefix}encoder.layer.{i}.", f"layers.{i}."
    attn = src + "attention."
    return [
        *_linear(dst + "qkv", *(f"{attn}self.{p}" for p in ("query", "key", "value"))),
        *_linear(dst + "attn_out", attn + "output.dense"),
        *_norm(dst + "attn_norm", attn + "output.LayerNorm"),
        *_linear(dst + "up", src + "intermediate.dense"),
        *_linear(dst + "down", src + "output.dense"),
        *_norm(dst + "out_norm", src + "output.LayerNorm"),
    ]


def hf_weights(cfg: EncoderConfig, prefix: str) -> list[WeightSpec]:
    emb = prefix + "embeddings."
    specs = [
        WeightSpec("words", Role.EMBEDDING, (emb + "word_embeddings.weight",)),
        WeightSpec("positions", Role.VECTOR, (emb + "position_embeddings.weight",)),
        # texts are embedded as one segment: only token type 0's row is used
        WeightSpec(
            "token_type", Role.VECTOR, (emb + "token_type_embeddings.weight",), (lambda a: a[:1],)
        ),
        *_norm("embed_norm", emb + "LayerNorm"),
    ]
    for i in range(cfg.num_layers):
        specs += _layer(i, prefix)
    return specs
