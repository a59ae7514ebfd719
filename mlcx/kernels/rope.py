"""Rotary position embedding applied by explicit per-token positions.

Positions come from the KV cache manager (one int32 per new token), so ragged batches, cached
prefixes and decode steps all rotate correctly. Default RoPE uses TVM's closed form; every
scaled variant (linear, llama3, YaRN, LongRoPE, llama.cpp's rope_freqs) is a per-feature
inverse-frequency table and a cos/sin scale (mlcx.kernels.rope_scaling) read as compile-time
constants by one formula. Every RoPE kernel (this one and the fused rope+append kernels) picks
its formula through `rope_freq_func`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from tvm import te, tirx
from tvm.relax.frontend.nn.llm.position_embedding import rope_freq_default

from mlcx.kernels.rope_scaling import rope_table


def check_rotary(rotary_dim: int, head_dim: int) -> None:
    """RoPE turns feature pairs of the half-split layout: an even count, at most the head."""
    if rotary_dim <= 0 or rotary_dim % 2 or rotary_dim > head_dim:
        raise ValueError(
            f"RoPE over {rotary_dim} of {head_dim} head features: the rotary dimension must be "
            "positive, even and at most head_dim"
        )


@dataclass(frozen=True)
class RopeParams:
    """A RoPE: base, scaling (mlcx.kernels.rope_scaling) and the features of each head it
    rotates, from the first (the rest pass through: partial rotary)."""

    theta: float
    scaling: dict[str, Any]
    rotary_dim: int

    def __hash__(self) -> int:
        return hash((self.theta, repr(sorted(self.scaling.items())), self.rotary_dim))


def _lookup(index: tirx.PrimExpr, values: Sequence[float], lo: int = 0) -> tirx.PrimExpr:
    """values[index] for a constant table, as a balanced tree of selects."""
    if len(values) == 1:
        return tirx.const(values[0], "float32")
    mid = len(values) // 2
    return tirx.Select(
        index < lo + mid, _lookup(index, values[:mid], lo), _lookup(index, values[mid:], lo + mid)
    )


def _table_freq(s, d, d_range: int, theta: float, dtype: str, scaling: dict[str, Any]):
    """A scaled RoPE: feature pair i turns at position * inv_freq[i] of the scaling's table,
    and cos/sin are multiplied by the table's scale."""
    table = rope_table(scaling, theta, d_range)
    freq = s * _lookup(d % (d_range // 2), table.inv_freq)
    freq_var = tirx.Var("freq", "float32")
    cos, sin = tirx.cos(freq_var), tirx.sin(freq_var)
    if table.scale != 1.0:
        scale = tirx.const(table.scale, "float32")
        cos, sin = cos * scale, sin * scale
    return cos.astype(dtype), sin.astype(dtype), {freq_var: freq}


def rope_freq_func(scaling: dict[str, Any]) -> Callable:
    """(position, feature, rotary_dim, theta, dtype) -> (cos, sin, lets) for a RoPE variant:
    TVM's closed form for the default, else the scaling's frequency table
    (mlcx.kernels.rope_scaling; LongRoPE resolved by `rope_for_context` first)."""
    if scaling.get("rope_type", "default") == "default":
        return rope_freq_default
    return partial(_table_freq, scaling=scaling)


# Block annotation with the RoPE parameters, so target passes can fuse RoPE into other kernels.
ROPE_ATTR = "mlcx.rope"


def rope_te(
    x: te.Tensor,
    positions: te.Tensor,
    theta: float,
    rope_scaling: dict[str, Any],
    rotary_dim: int | None = None,
) -> te.Tensor:
    """x [tokens, heads, head_dim] rotated in the GPT-NeoX "half split" layout used by Llama,
    over the first `rotary_dim` features of each head (None: all); the rest are copied."""
    head_dim = int(x.shape[2])
    rotary = rotary_dim or head_dim
    check_rotary(rotary, head_dim)
    half = rotary // 2
    freq = rope_freq_func(rope_scaling)

    def rotate(s, h, d):
        cos, sin, lets = freq(positions[s].astype("float32"), d, rotary, theta, "float32")
        partner = tirx.if_then_else(d < half, -x[s, h, d + half], x[s, h, d - half])
        value = cos * x[s, h, d].astype("float32") + sin * partner.astype("float32")
        for var, bound in lets.items():
            value = tirx.Let(var, bound, value)
        return tirx.if_then_else(d < rotary, value.astype(x.dtype), x[s, h, d])

    params = {"theta": theta, "scaling": rope_scaling, "rotary_dim": rotary}
    return te.compute(x.shape, rotate, name="rope", attrs={ROPE_ATTR: json.dumps(params)})


def position_scale_te(x: te.Tensor, positions: te.Tensor, beta: float, period: int) -> te.Tensor:
    """x [tokens, heads, dim] times 1 + beta * log(1 + floor(position / period)) per token
    (Ministral 3 scales its queries so over contexts past its pretraining length)."""

    def scaled(s, h, d):
        blocks = tirx.floor(positions[s].astype("float32") / float(period))
        factor = 1.0 + beta * tirx.log(1.0 + blocks)
        return (x[s, h, d].astype("float32") * factor).astype(x.dtype)

    return te.compute(x.shape, scaled, name="q_position_scale")
