"""The token mixers of a hybrid decoder's state layers (DecoderConfig.layer_kinds), beside
attention: each takes its layer's state tensors (one slot per sequence, updated in place at the
step's `state_slots`) where attention takes KV pages. The kernels are mlcx.kernels.hybrid's.

Parameters (mlcx.frontends.state_weights reads the same names):
- GatedDeltaNet (`delta.`): `in_proj` (q|k|v, z, b, a rows), `conv_weight` [q|k|v, taps],
  `dt_bias`, `a` (= -exp(A_log)), `norm_weight` [v_dim], `out_proj`;
- ShortConv (`conv.`): `in_proj` (B, C, x rows), `conv_weight` [hidden, taps], `out_proj`,
  and biases on all three where the config has them.
"""

from __future__ import annotations

from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.hybrid_config import CONV, DELTA, conv_shape, delta_conv_shape, delta_shape
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.linear import QLinear
from mlcx.kernels.hybrid.ops import StateOps, StateStep


def _f32(x: nn.Tensor) -> nn.Tensor:
    return x if x.dtype == "float32" else x.astype("float32")


class GatedDeltaNet(nn.Module):
    """Qwen3.5's linear attention: one projection to q|k|v, z, b and a; the causal conv + SiLU
    over q|k|v; decays g = a_param * softplus(a + dt_bias) and beta = sigmoid(b) in float32; the
    gated delta rule (q and k L2-normalized inside); RMSNorm of each v head times SiLU(z)."""

    def __init__(self, cfg: DecoderConfig, formats: Formats, prefix: str, ops: StateOps, dtype):
        self.ops, self.eps = ops, cfg.rms_norm_eps
        self.shape = delta_shape(cfg, dtype)
        self.conv_shape = delta_conv_shape(cfg, dtype)
        heads, width = self.shape.v_heads, self.shape.width
        values = heads * self.shape.v_dim
        self.split = [width, width + values, width + values + heads]
        self.in_proj = QLinear(
            cfg.hidden_size, width + values + 2 * heads, formats[prefix + "in_proj"], dtype, False
        )
        self.conv_weight = nn.Parameter((width, cfg.delta_conv_kernel), dtype)
        self.dt_bias = nn.Parameter((heads,), dtype)
        self.a = nn.Parameter((heads,), dtype)
        self.norm_weight = nn.Parameter((self.shape.v_dim,), dtype)
        self.out_proj = QLinear(values, cfg.hidden_size, formats[prefix + "out_proj"], dtype, False)

    def forward(self, x: nn.Tensor, states: tuple, step: StateStep, decode: bool):
        conv, recurrent = states
        tokens, shape = x.shape[0], self.shape
        qkv, z, b, a = op.split(self.in_proj(x), self.split, axis=-1)
        qkv, conv = self.ops.conv(qkv, conv, step, self.conv_weight, None, self.conv_shape, decode)
        g = op.softplus(_f32(a) + _f32(self.dt_bias)) * _f32(self.a)
        beta = op.sigmoid(_f32(b))
        o, recurrent = self.ops.delta_rule(qkv, g, beta, recurrent, step, shape, decode)
        z = op.reshape(z, (tokens, shape.v_heads, shape.v_dim))
        o = op.rms_norm(o, self.norm_weight, axes=[-1], epsilon=self.eps) * op.silu(z)
        out = self.out_proj(op.reshape(o, (tokens, shape.v_heads * shape.v_dim)))
        return out, (conv, recurrent)


class ShortConv(nn.Module):
    """LFM2's short convolution: B, C, x = in_proj(h); out_proj(C * conv(B * x))."""

    def __init__(self, cfg: DecoderConfig, formats: Formats, prefix: str, ops: StateOps, dtype):
        self.ops, self.shape = ops, conv_shape(cfg, dtype)
        hidden, bias = cfg.hidden_size, cfg.conv_bias
        self.in_proj = QLinear(hidden, 3 * hidden, formats[prefix + "in_proj"], dtype, bias)
        self.conv_weight = nn.Parameter((hidden, cfg.conv_kernel), dtype)
        self.conv_bias = nn.Parameter((hidden,), dtype) if bias else None
        self.out_proj = QLinear(hidden, hidden, formats[prefix + "out_proj"], dtype, bias)

    def forward(self, x: nn.Tensor, states: tuple, step: StateStep, decode: bool):
        (conv,) = states
        b, c, h = op.split(self.in_proj(x), 3, axis=-1)
        y, conv = self.ops.conv(
            b * h, conv, step, self.conv_weight, self.conv_bias, self.shape, decode
        )
        return self.out_proj(c * y), (conv,)


# a state layer's mixer by its kind; its parameters live under `layers.i.<kind>.`
MIXERS: dict[str, type[nn.Module]] = {DELTA: GatedDeltaNet, CONV: ShortConv}
