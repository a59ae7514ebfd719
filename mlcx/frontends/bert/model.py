"""The BERT encoder graph: embeddings + LayerNorm, then post-norm blocks of bidirectional
attention and a GELU MLP; see mlcx.frontends.nn.embedding_model for the exported function."""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.bert.config import EncoderConfig
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.embedding_model import (
    attention_bias,
    dense_attention,
    embed_spec,
    pooled,
)
from mlcx.frontends.nn.linear import QEmbedding, QLinear

_GELU = {"gelu": op.gelu, "gelu_tanh": lambda x: op.gelu(x, approximate="tanh")}


class EncoderLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, formats: Formats, index: int, dtype: str):
        p, h = f"layers.{index}.", cfg.hidden_size
        self.cfg = cfg
        self.qkv = QLinear(h, 3 * h, formats[p + "qkv"], dtype, True)
        self.attn_out = QLinear(h, h, formats[p + "attn_out"], dtype, True)
        self.attn_norm = nn.LayerNorm(h, cfg.layer_norm_eps, dtype=dtype)
        self.up = QLinear(h, cfg.intermediate_size, formats[p + "up"], dtype, True)
        self.down = QLinear(cfg.intermediate_size, h, formats[p + "down"], dtype, True)
        self.out_norm = nn.LayerNorm(h, cfg.layer_norm_eps, dtype=dtype)

    def forward(self, x: nn.Tensor, bias: nn.Tensor, rows, cols) -> nn.Tensor:
        cfg = self.cfg
        tokens = x.shape[0]
        qkv = op.reshape(self.qkv(x), (tokens, 3 * cfg.num_heads, cfg.head_dim))
        q, k, v = op.split(qkv, 3, axis=1)
        out = op.reshape(dense_attention(q, k, v, bias, rows, cols), (tokens, cfg.hidden_size))
        x = self.attn_norm(x + self.attn_out(out))
        return self.out_norm(x + self.down(_GELU[cfg.hidden_act](self.up(x))))


class BertEncoder(nn.Module):
    def __init__(self, cfg: EncoderConfig, formats: Formats, dtype: str):
        h = cfg.hidden_size
        self.words = QEmbedding(cfg.vocab_size, h, formats["words"], dtype)
        self.positions = nn.Parameter((cfg.max_positions, h), dtype)
        self.token_type = nn.Parameter((1, h), dtype)
        self.embed_norm = nn.LayerNorm(h, cfg.layer_norm_eps, dtype=dtype)
        self.layers = nn.ModuleList(
            [EncoderLayer(cfg, formats, i, dtype) for i in range(cfg.num_layers)]
        )

    def embed(self, input_ids, positions, rows, mask, pool):
        x = self.words(input_ids) + op.take(self.positions, positions, axis=0) + self.token_type
        x = self.embed_norm(x)
        bias = attention_bias(mask, causal=False)
        for layer in self.layers:
            x = layer(x, bias, rows, positions)
        return pooled(x, pool)

    def export_spec(self) -> dict:
        return embed_spec()


def build(cfg: EncoderConfig, formats: Formats, dtype: str) -> BertEncoder:
    return BertEncoder(cfg, formats, dtype)
