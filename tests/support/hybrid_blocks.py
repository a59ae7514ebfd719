"""The two state layers written as a model family would write them on mlcx.kernels.hybrid's
StateOps (tests only: the families live in mlcx.frontends), with transformers' layers as the
reference: Qwen3.5's Gated DeltaNet and LFM2's short convolution, tiny and random.

Each block exports `prefill` and `decode` taking (input_ids, the step arrays, its state tensors)
and returning (out, the state tensors), the state updated in place; the ids pick rows of an
embedding (`embed`), as a model's first layer would (the GPU passes find the step's token count
by that parameter's name).
"""

from __future__ import annotations

import numpy as np
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

from mlcx.kernels.hybrid.ops import StateOps, StateStep
from mlcx.kernels.hybrid.shapes import ConvShape, DeltaShape

HIDDEN, K_HEADS, V_HEADS, K_DIM, V_DIM, TAPS, EPS = 32, 2, 4, 16, 16, 4, 1e-6
VOCAB = 64
LFM_TAPS = 3
STEP = ("positions", "q_indptr", "state_slots")


def qwen35_config():
    from transformers import Qwen3_5TextConfig

    return Qwen3_5TextConfig(
        hidden_size=HIDDEN,
        linear_num_key_heads=K_HEADS,
        linear_num_value_heads=V_HEADS,
        linear_key_head_dim=K_DIM,
        linear_value_head_dim=V_DIM,
        linear_conv_kernel_dim=TAPS,
        rms_norm_eps=EPS,
        num_hidden_layers=1,
        layer_types=["linear_attention"],
    )


class DeltaBlock(nn.Module):
    """Qwen3_5GatedDeltaNet: projections, conv + SiLU, gates, delta rule, gated RMSNorm."""

    def __init__(self, ops: StateOps, dtype: str = "float32"):
        self.ops, self.dtype = ops, dtype
        self.embed = nn.Embedding(VOCAB, HIDDEN, dtype=dtype)
        self.delta = DeltaShape(K_HEADS, V_HEADS, K_DIM, V_DIM, dtype)
        self.conv_shape = ConvShape(self.delta.width, TAPS, dtype, activation="silu")
        width = self.delta.width
        self.in_proj_qkv = nn.Linear(HIDDEN, width, bias=False, dtype=dtype)
        self.in_proj_z = nn.Linear(HIDDEN, V_HEADS * V_DIM, bias=False, dtype=dtype)
        self.in_proj_b = nn.Linear(HIDDEN, V_HEADS, bias=False, dtype=dtype)
        self.in_proj_a = nn.Linear(HIDDEN, V_HEADS, bias=False, dtype=dtype)
        self.conv_weight = nn.Parameter((width, TAPS), dtype)
        self.dt_bias = nn.Parameter((V_HEADS,), "float32")
        self.a_log = nn.Parameter((V_HEADS,), "float32")
        self.norm_weight = nn.Parameter((V_DIM,), dtype)
        self.out_proj = nn.Linear(V_HEADS * V_DIM, HIDDEN, bias=False, dtype=dtype)

    def _forward(self, ids, step: StateStep, conv, recurrent, decode: bool):
        x = self.embed(ids)
        tokens = x.shape[0]
        qkv, conv = self.ops.conv(
            self.in_proj_qkv(x), conv, step, self.conv_weight, None, self.conv_shape, decode
        )
        a = self.in_proj_a(x).astype("float32")
        g = op.softplus(a + self.dt_bias) * (op.exp(self.a_log) * -1.0)
        beta = op.sigmoid(self.in_proj_b(x).astype("float32"))
        o, recurrent = self.ops.delta_rule(qkv, g, beta, recurrent, step, self.delta, decode)
        z = op.reshape(self.in_proj_z(x), (tokens, V_HEADS, V_DIM))
        o = op.rms_norm(o, self.norm_weight, axes=[-1], epsilon=EPS) * op.silu(z)
        return self.out_proj(op.reshape(o, (tokens, V_HEADS * V_DIM))), conv, recurrent

    def prefill(self, input_ids, positions, q_indptr, state_slots, conv, recurrent):
        step = StateStep(positions, q_indptr, state_slots)
        return self._forward(input_ids, step, conv, recurrent, False)

    def decode(self, input_ids, positions, q_indptr, state_slots, conv, recurrent):
        step = StateStep(positions, q_indptr, state_slots)
        return self._forward(input_ids, step, conv, recurrent, True)

    def states(self):
        (conv, conv_dtype), (rec, rec_dtype) = self.conv_shape.state(), self.delta.state()
        return [("conv", conv, conv_dtype), ("recurrent", rec, rec_dtype)]


class ShortConvBlock(nn.Module):
    """Lfm2ShortConv: in_proj -> B, C, x; C * conv(B * x); out_proj (with biases)."""

    def __init__(self, ops: StateOps, dtype: str = "float32"):
        self.ops, self.dtype = ops, dtype
        self.embed = nn.Embedding(VOCAB, HIDDEN, dtype=dtype)
        self.shape = ConvShape(HIDDEN, LFM_TAPS, dtype, bias=True)
        self.in_proj = nn.Linear(HIDDEN, 3 * HIDDEN, bias=True, dtype=dtype)
        self.conv_weight = nn.Parameter((HIDDEN, LFM_TAPS), dtype)
        self.conv_bias = nn.Parameter((HIDDEN,), dtype)
        self.out_proj = nn.Linear(HIDDEN, HIDDEN, bias=True, dtype=dtype)

    def _forward(self, ids, step: StateStep, conv, decode: bool):
        b, c, h = op.split(self.in_proj(self.embed(ids)), 3, axis=-1)
        y, conv = self.ops.conv(
            b * h, conv, step, self.conv_weight, self.conv_bias, self.shape, decode
        )
        return self.out_proj(c * y), conv

    def prefill(self, input_ids, positions, q_indptr, state_slots, conv):
        return self._forward(input_ids, StateStep(positions, q_indptr, state_slots), conv, False)

    def decode(self, input_ids, positions, q_indptr, state_slots, conv):
        return self._forward(input_ids, StateStep(positions, q_indptr, state_slots), conv, True)

    def states(self):
        shape, dtype = self.shape.state()
        return [("conv", shape, dtype)]


def export_spec(block) -> dict:
    steps = {
        "positions": spec.Tensor(("tokens",), "int32"),
        "q_indptr": spec.Tensor(("batch_plus_one",), "int32"),
        "state_slots": spec.Tensor(("batch",), "int32"),
    }
    states = {n: spec.Tensor(("num_state_slots", *s), d) for n, s, d in block.states()}
    x = {"input_ids": spec.Tensor(("tokens",), "int32")}
    one = {"param_mode": "packed", "effect_mode": "none"}
    return {f: {**x, **steps, **states, "$": one} for f in ("prefill", "decode")}


def delta_weights(rng: np.random.Generator, layer) -> dict[str, np.ndarray]:
    """Random weights for transformers' Qwen3_5GatedDeltaNet `layer` (set there too), by the
    DeltaBlock's parameter names."""
    import torch

    names = {
        "embed.weight": None,
        "in_proj_qkv.weight": "in_proj_qkv.weight",
        "in_proj_z.weight": "in_proj_z.weight",
        "in_proj_b.weight": "in_proj_b.weight",
        "in_proj_a.weight": "in_proj_a.weight",
        "conv_weight": "conv1d.weight",
        "dt_bias": "dt_bias",
        "a_log": "A_log",
        "norm_weight": "norm.weight",
        "out_proj.weight": "out_proj.weight",
    }
    return _randomize(rng, layer, names, torch)


def conv_weights(rng: np.random.Generator, layer) -> dict[str, np.ndarray]:
    import torch

    names = {
        "embed.weight": None,
        "in_proj.weight": "in_proj.weight",
        "in_proj.bias": "in_proj.bias",
        "conv_weight": "conv.weight",
        "conv_bias": "conv.bias",
        "out_proj.weight": "out_proj.weight",
        "out_proj.bias": "out_proj.bias",
    }
    return _randomize(rng, layer, names, torch)


def _randomize(rng, layer, names: dict[str, str | None], torch) -> dict[str, np.ndarray]:
    """Ours: theirs (None: the embedding, ours only)."""
    params = dict(layer.named_parameters())
    out = {"embed.weight": rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)}
    with torch.no_grad():
        for ours, theirs in names.items():
            if theirs is None:
                continue
            p = params[theirs]
            value = rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3
            p.copy_(torch.from_numpy(value))
            out[ours] = value.reshape(value.shape[0], -1) if ours == "conv_weight" else value
    return out
