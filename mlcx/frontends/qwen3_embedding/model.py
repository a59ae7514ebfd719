"""A decoder run as an embedder: each text once through the causal stack, no KV cache, no
lm_head; see mlcx.frontends.nn.embedding_model for the exported function."""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import Formats, GatedMLP
from mlcx.frontends.nn.embedding_model import (
    attention_bias,
    dense_attention,
    embed_spec,
    pooled,
)
from mlcx.frontends.nn.linear import QEmbedding, QLinear
from mlcx.kernels.rope import rope_te
from mlcx.kernels.rope_scaling import rope_for_context


def _rms(cfg: DecoderConfig, size: int, dtype: str) -> nn.RMSNorm:
    return nn.RMSNorm(size, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)


class RopeAttention(nn.Module):
    """Fused qkv, per-head q/k RMSNorm where the model has it, RoPE by position, attention over
    the padded batch, o_proj."""

    def __init__(self, cfg: DecoderConfig, formats: Formats, prefix: str, dtype: str):
        self.cfg = cfg
        self.rope = (cfg.rope_theta, rope_for_context(dict(cfg.rope_scaling), cfg.context_window))
        fused = (cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim
        self.qkv = QLinear(cfg.hidden_size, fused, formats[prefix + "qkv"], dtype, cfg.qkv_bias)
        self.o = QLinear(
            cfg.num_heads * cfg.head_dim, cfg.hidden_size, formats[prefix + "o"], dtype, False
        )
        self.q_norm = _rms(cfg, cfg.head_dim, dtype) if cfg.qk_norm else None
        self.k_norm = _rms(cfg, cfg.head_dim, dtype) if cfg.qk_norm else None

    def forward(self, x, positions, bias, rows) -> nn.Tensor:
        cfg = self.cfg
        heads = cfg.num_heads + 2 * cfg.num_kv_heads
        tokens = x.shape[0]
        qkv = op.reshape(self.qkv(x), (tokens, heads, cfg.head_dim))
        q, k, v = op.split(qkv, [cfg.num_heads, cfg.num_heads + cfg.num_kv_heads], axis=1)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = self._rope(q, positions), self._rope(k, positions)
        out = dense_attention(q, k, v, bias, rows, positions)
        return self.o(op.reshape(out, (tokens, cfg.num_heads * cfg.head_dim)))

    def _rope(self, x: nn.Tensor, positions: nn.Tensor) -> nn.Tensor:
        theta, scaling = self.rope
        rotary = self.cfg.rope_dim
        return op.tensor_expr_op(
            lambda xt, pt: rope_te(xt, pt, theta, scaling, rotary), "rope", [x, positions]
        )


class EmbedderLayer(nn.Module):
    def __init__(self, cfg: DecoderConfig, formats: Formats, index: int, dtype: str):
        prefix = f"layers.{index}."
        # the parameters' names are the decoder's (mlcx.frontends.decoder_weights)
        self.attn_norm = _rms(cfg, cfg.hidden_size, dtype)
        self.attn = RopeAttention(cfg, formats, prefix + "attn.", dtype)
        self.mlp_norm = _rms(cfg, cfg.hidden_size, dtype)
        self.mlp = GatedMLP(cfg, formats, prefix + "mlp.", dtype)

    def forward(self, x, positions, bias, rows) -> nn.Tensor:
        x = x + self.attn(self.attn_norm(x), positions, bias, rows)
        return x + self.mlp(self.mlp_norm(x))


class DecoderEmbedder(nn.Module):
    def __init__(self, cfg: DecoderConfig, formats: Formats, dtype: str):
        self.words = QEmbedding(cfg.vocab_size, cfg.hidden_size, formats["words"], dtype)
        self.layers = nn.ModuleList(
            [EmbedderLayer(cfg, formats, i, dtype) for i in range(cfg.num_layers)]
        )
        self.norm = _rms(cfg, cfg.hidden_size, dtype)

    def embed(self, input_ids, positions, rows, mask, pool):
        x = self.words(input_ids)
        bias = attention_bias(mask, causal=True)
        for layer in self.layers:
            x = layer(x, positions, bias, rows)
        return pooled(self.norm(x), pool)

    def export_spec(self) -> dict:
        return embed_spec()


def build(cfg: DecoderConfig, formats: Formats, dtype: str) -> DecoderEmbedder:
    return DecoderEmbedder(cfg, formats, dtype)
