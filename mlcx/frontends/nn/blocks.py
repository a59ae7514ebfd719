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
from mlcx.kernels.norm import rms_normalize_te
from mlcx.kernels.rope import position_scale_te, rope_te
from mlcx.kernels.rope_scaling import rope_for_context
from mlcx.quantization.formats import WeightFormat

Formats = Mapping[str, WeightFormat]

# the gated MLP's activation on the gate half, by DecoderConfig.hidden_act
ACTIVATIONS: dict[str, Callable[[nn.Tensor], nn.Tensor]] = {
    "silu": op.silu,
    "gelu_tanh": lambda x: op.gelu(x, approximate="tanh"),
}


def _head_norm(cfg: DecoderConfig, dtype: str, heads: int, dim: int) -> nn.RMSNorm | None:
    """RMSNorm over each head's `dim` features (q/k norm), or over all `heads` heads' features
    together (scope "all"); None where the model has none."""
    if not cfg.qk_norm:
        return None
    width = dim * (heads if cfg.qk_norm_scope == "all" else 1)
    return nn.RMSNorm(width, -1, cfg.rms_norm_eps, bias=False, dtype=dtype)


def _apply_norm(norm: nn.RMSNorm | None, x: nn.Tensor) -> nn.Tensor:
    """norm over x [tokens, heads, head_dim]: per head, or over all heads where its width
    says so; x where there is none."""
    if norm is None:
        return x
    tokens, heads, dim = x.shape
    if norm.weight.shape[0] == dim:
        return norm(x)
    return op.reshape(norm(op.reshape(x, (tokens, heads * dim))), (tokens, heads, dim))


class PagedAttention(nn.Module):
    """Fused q[kv] projection, per-head q/k RMSNorm where the model has it, RoPE by position
    (layer `index`'s base, scaling and rotary features), KV append into pages, paged attention
    (layer `index`'s sliding window), o_proj. Layer `index`'s heads may have a width of their
    own (DecoderConfig.layer_head_dim); a layer reading another's pages projects only its
    queries, and one whose values are its keys (k_eq_v_layers) projects no values. A gated
    attention's query heads each come with a gate on their output (Qwen3.5)."""

    def __init__(
        self, cfg: DecoderConfig, formats: Formats, prefix: str, kv: PagedKVOps, index: int
    ):
        dtype = kv.layout.dtype
        self.cfg = cfg
        self.heads, self.kv_heads = cfg.num_heads, cfg.layer_kv_heads(index)
        self.head_dim = dim = cfg.layer_head_dim(index)
        self.kv = kv.reshaped(self.kv_heads, dim)
        self.window = cfg.layer_window(index)
        theta, scaling = cfg.layer_rope(index)
        self.rope = (theta, rope_for_context(dict(scaling), cfg.context_window))
        self.rope_dim = cfg.layer_rope_dim(index)
        self.uses_rope = index not in cfg.nope_layers
        # the kernels scale scores by 1 / sqrt(head_dim); another scale is folded into q
        self.q_scale = cfg.attn_scale * math.sqrt(dim) if cfg.attn_scale else 1.0
        # heads of the fused projection's output: queries (each followed by its gate in a
        # gated attention), then the keys and values it computes
        self.parts = [self.heads * (2 if cfg.attn_output_gate else 1)]
        if cfg.owns_kv(index):
            self.parts += [self.kv_heads] * (1 if index in cfg.k_eq_v_layers else 2)
        names = (prefix + "qkv", prefix + "o")
        fused = sum(self.parts) * dim
        self.qkv = QLinear(cfg.hidden_size, fused, formats[names[0]], dtype, cfg.qkv_bias, names[0])
        self.o = QLinear(
            self.heads * dim, cfg.hidden_size, formats[names[1]], dtype, cfg.o_bias, names[1]
        )
        self.q_norm = _head_norm(cfg, dtype, self.heads, dim)
        self.k_norm = _head_norm(cfg, dtype, self.kv_heads, dim) if len(self.parts) > 1 else None
        # attention sinks in the activations' dtype, like the other vectors (bf16 sinks are
        # exact in f16)
        self.sinks = nn.Parameter((self.heads,), dtype) if cfg.attn_sinks else None

    def forward(
        self, x: nn.Tensor, pages: nn.Tensor, step: StepTensors, decode: bool
    ) -> tuple[nn.Tensor, nn.Tensor]:
        tokens, width = x.shape[0], self.heads * self.head_dim
        qkv = op.reshape(self.qkv(x, step.lora), (tokens, sum(self.parts), self.head_dim))
        q, k, v = self._split(qkv)
        q, gate = self._gate(q)
        q = self._position(_apply_norm(self.q_norm, q), step)
        if k is not None:  # else keys and values are another layer's, in its pages
            k = self._rope(_apply_norm(self.k_norm, k), step.positions)
            pages = self.kv.append(pages, k, self._values(v), step.slots)
        if self.q_scale != 1.0:
            q = q * self.q_scale
        options = (self.window, self.cfg.attn_logit_softcap, self.sinks)
        out = op.reshape(self.kv.attend(q, pages, step, decode, *options), (tokens, width))
        if gate is not None:
            out = out * op.sigmoid(op.reshape(gate, (tokens, width)))
        return self.o(out, step.lora), pages

    def _split(self, qkv: nn.Tensor) -> tuple[nn.Tensor, nn.Tensor | None, nn.Tensor | None]:
        """Queries, keys and values of the fused projection (no keys or values where the layer
        reads another's pages; the keys' projection, before their norm, as values where
        they are the same)."""
        if len(self.parts) == 1:
            return qkv, None, None
        if len(self.parts) == 2:
            q, k = op.split(qkv, [self.parts[0]], axis=1)
            return q, k, k
        q_heads = self.parts[0]
        q, k, v = op.split(qkv, [q_heads, q_heads + self.kv_heads], axis=1)
        return q, k, v

    def _gate(self, q: nn.Tensor) -> tuple[nn.Tensor, nn.Tensor | None]:
        """(queries, their output gates) of a gated attention; (q, None) otherwise."""
        if not self.cfg.attn_output_gate:
            return q, None
        tokens = q.shape[0]
        q, gate = op.split(op.reshape(q, (tokens, self.heads, 2 * self.head_dim)), 2, axis=-1)
        return q, gate

    def _values(self, v: nn.Tensor) -> nn.Tensor:
        if not self.cfg.v_norm:
            return v
        eps = self.cfg.rms_norm_eps
        return op.tensor_expr_op(lambda vt: rms_normalize_te(vt, eps), "v_norm", [v])

    def _position(self, q: nn.Tensor, step: StepTensors) -> nn.Tensor:
        """The queries' RoPE and position scale."""
        cfg = self.cfg
        q = self._rope(q, step.positions)
        if cfg.q_position_beta:
            beta, period = cfg.q_position_beta, cfg.q_position_period
            q = op.tensor_expr_op(
                lambda xt, pt: position_scale_te(xt, pt, beta, period),
                "q_position_scale",
                [q, step.positions],
            )
        return q

    def _rope(self, x: nn.Tensor, positions: nn.Tensor) -> nn.Tensor:
        if not self.uses_rope:
            return x
        theta, scaling = self.rope
        rotary = self.rope_dim
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
    """down(act(gate) * up) with gate and up in one fused projection (SwiGLU, GeGLU), of
    `width` features (the config's intermediate size where None)."""

    def __init__(
        self,
        cfg: DecoderConfig,
        formats: Formats,
        prefix: str,
        dtype: str,
        width: int | None = None,
    ):
        inter, hidden = width or cfg.intermediate_size, cfg.hidden_size
        self.act = ACTIVATIONS[cfg.hidden_act]
        names = (prefix + "gate_up", prefix + "down")
        self.gate_up = QLinear(hidden, 2 * inter, formats[names[0]], dtype, False, names[0])
        self.down = QLinear(inter, hidden, formats[names[1]], dtype, False, names[1])

    def forward(self, x: nn.Tensor, lora: LoraStep | None = None) -> nn.Tensor:
        gate, up = op.split(self.gate_up(x, lora), 2, axis=-1)
        return self.down(self.act(gate) * up, lora)
