"""The blocks of the shared decoder layer (mlcx.frontends.nn.layer): RoPE attention over paged KV,
the gated MLP."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.linear import QLinear
from mlcx.frontends.nn.lora import LoraStep
from mlcx.kernels.attention import PagedKVOps, StepTensors
from mlcx.kernels.mrope_te import mrope_te
from mlcx.kernels.rope import position_scale_te, rope_te
from mlcx.kernels.rope_scaling import rope_for_context
from mlcx.quantization.formats import WeightFormat

Formats = Mapping[str, WeightFormat]

# the gated MLP's activation on the gate half, by DecoderConfig.hidden_act
ACTIVATIONS: dict[str, Callable[[nn.Tensor], nn.Tensor]] = {
    "silu": op.silu,
    "gelu_tanh": lambda x: op.gelu(x, approximate="tanh"),
}


def _head_norm(cfg: DecoderConfig, dtype: str, heads: int) -> nn.RMSNorm | None:
    """RMSNorm over each head's features (q/k norm), or over all `heads` heads' features
    together (scope "all"); None where the model has none."""
    if not cfg.qk_norm:
        return None
    width = cfg.head_dim * (heads if cfg.qk_norm_scope == "all" else 1)
    return nn.RMSNorm(width, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)


def _apply_norm(norm: nn.RMSNorm, x: nn.Tensor) -> nn.Tensor:
    """norm over x [tokens, heads, head_dim]: per head, or over all heads where its width
    says so."""
    tokens, heads, dim = x.shape
    if norm.weight.shape[0] == dim:
        return norm(x)
    return op.reshape(norm(op.reshape(x, (tokens, heads * dim))), (tokens, heads, dim))


class PagedAttention(nn.Module):
    """Fused qkv projection, per-head q/k RMSNorm where the model has it, RoPE by position
    (layer `index`'s base and scaling, over the first cfg.rope_dim features of each head), KV
    append into pages, paged attention (layer `index`'s sliding window), o_proj."""

    def __init__(
        self, cfg: DecoderConfig, formats: Formats, prefix: str, kv: PagedKVOps, index: int
    ):
        dtype = kv.layout.dtype
        self.cfg = cfg
        self.kv = kv
        self.window = cfg.layer_window(index)
        theta, scaling = cfg.layer_rope(index)
        self.rope = (theta, rope_for_context(dict(scaling), cfg.context_window))
        self.uses_rope = index not in cfg.nope_layers
        # the kernels scale scores by 1 / sqrt(head_dim); another scale is folded into q
        self.q_scale = cfg.attn_scale * math.sqrt(cfg.head_dim) if cfg.attn_scale else 1.0
        # a gated attention's q projection gives each head's q, then its gate (Qwen3.5)
        self.q_heads = cfg.num_heads * (2 if cfg.attn_output_gate else 1)
        fused = (self.q_heads + 2 * cfg.num_kv_heads) * cfg.head_dim
        self.qkv = QLinear(
            cfg.hidden_size, fused, formats[prefix + "qkv"], dtype, cfg.qkv_bias, prefix + "qkv"
        )
        self.o = QLinear(
            cfg.num_heads * cfg.head_dim,
            cfg.hidden_size,
            formats[prefix + "o"],
            dtype,
            cfg.o_bias,
            prefix + "o",
        )
        self.q_norm = _head_norm(cfg, dtype, cfg.num_heads)
        self.k_norm = _head_norm(cfg, dtype, cfg.num_kv_heads)
        # attention sinks in the activations' dtype, like the other vectors (bf16 sinks are
        # exact in f16)
        self.sinks = nn.Parameter((cfg.num_heads,), dtype) if cfg.attn_sinks else None

    def forward(
        self, x: nn.Tensor, pages: nn.Tensor, step: StepTensors, decode: bool
    ) -> tuple[nn.Tensor, nn.Tensor]:
        cfg = self.cfg
        tokens = x.shape[0]
        heads, dim = self.q_heads, cfg.head_dim
        qkv = op.reshape(self.qkv(x, step.lora), (tokens, heads + 2 * cfg.num_kv_heads, dim))
        q, k, v = op.split(qkv, [heads, heads + cfg.num_kv_heads], axis=1)
        gate = None
        if cfg.attn_output_gate:
            q, gate = op.split(op.reshape(q, (tokens, cfg.num_heads, 2 * dim)), 2, axis=-1)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = _apply_norm(self.q_norm, q), _apply_norm(self.k_norm, k)
        if self.uses_rope:
            q, k = self._rope(q, step.positions), self._rope(k, step.positions)
        if cfg.q_position_beta:
            beta, period = cfg.q_position_beta, cfg.q_position_period
            q = op.tensor_expr_op(
                lambda xt, pt: position_scale_te(xt, pt, beta, period),
                "q_position_scale",
                [q, step.positions],
            )
        if self.q_scale != 1.0:
            q = q * self.q_scale
        pages = self.kv.append(pages, k, v, step.slots)
        options = (self.window, self.cfg.attn_logit_softcap, self.sinks)
        out = self.kv.attend(q, pages, step, decode, *options)
        out = op.reshape(out, (tokens, cfg.num_heads * dim))
        if gate is not None:
            out = out * op.sigmoid(op.reshape(gate, (tokens, cfg.num_heads * dim)))
        return self.o(out, step.lora), pages

    def _rope(self, x: nn.Tensor, positions: nn.Tensor) -> nn.Tensor:
        theta, scaling = self.rope
        rotary = self.cfg.rope_dim
        if self.cfg.mrope_sections:  # positions [3, tokens] (mlcx.kernels.mrope)
            sections, interleaved = self.cfg.mrope_sections, self.cfg.mrope_interleaved
            return op.tensor_expr_op(
                lambda xt, pt: mrope_te(xt, pt, theta, scaling, sections, interleaved, rotary),
                "mrope",
                [x, positions],
            )
        return op.tensor_expr_op(
            lambda xt, pt: rope_te(xt, pt, theta, scaling, rotary), "rope", [x, positions]
        )


class GatedMLP(nn.Module):
    """down(act(gate) * up) with gate and up in one fused projection (SwiGLU, GeGLU)."""

    def __init__(self, cfg: DecoderConfig, formats: Formats, prefix: str, dtype: str):
        self.act = ACTIVATIONS[cfg.hidden_act]
        inter, hidden = cfg.intermediate_size, cfg.hidden_size
        names = (prefix + "gate_up", prefix + "down")
        self.gate_up = QLinear(hidden, 2 * inter, formats[names[0]], dtype, False, names[0])
        self.down = QLinear(inter, hidden, formats[names[1]], dtype, False, names[1])

    def forward(self, x: nn.Tensor, lora: LoraStep | None = None) -> nn.Tensor:
        gate, up = op.split(self.gate_up(x, lora), 2, axis=-1)
        return self.down(self.act(gate) * up, lora)
