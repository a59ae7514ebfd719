"""Rotary position embedding applied by explicit per-token positions.

Positions come from the KV cache manager (one int32 per new token), so ragged batches, cached
prefixes and decode steps all rotate correctly. The frequency formulas (default, llama3, ...)
are TVM's, except LongRoPE, whose per-feature factors are compile-time constants here
(`rope_freq_func`); every RoPE kernel (this one and the fused rope+append kernels) picks its
formula through `rope_freq_func`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from tvm import te, tirx
from tvm.relax.frontend.nn.llm.position_embedding import rope_freq_default, switch_rope_freq_func


@dataclass(frozen=True)
class RopeParams:
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


def _longrope_freq(s, d, d_range: int, theta: float, dtype: str, factors, attention_factor):
    """LongRoPE: feature pair i turns at position / (factors[i] * theta^(2i / d_range)), and
    cos/sin are scaled by the attention factor."""
    half = d_range // 2
    inv = [1.0 / (f * theta ** (2 * i / d_range)) for i, f in enumerate(factors)]
    freq = s * _lookup(d % half, inv)
    freq_var = tirx.Var("freq", "float32")
    scale = tirx.const(attention_factor, "float32")
    cos = (tirx.cos(freq_var) * scale).astype(dtype)
    sin = (tirx.sin(freq_var) * scale).astype(dtype)
    return cos, sin, {freq_var: freq}


def _linear_freq(s, d, d_range: int, theta: float, dtype: str, factor: float):
    """Linear scaling: positions divided by `factor`."""
    return rope_freq_default(s / tirx.const(factor, "float32"), d, d_range, theta, dtype)


def rope_freq_func(scaling: dict[str, Any]) -> Callable:
    """(position, feature, rotary_dim, theta, dtype) -> (cos, sin, lets) for a RoPE variant:
    default, llama3 (TVM's formulas), linear, or longrope (resolved by `rope_for_context`)."""
    kind = scaling.get("rope_type")
    if kind == "longrope":
        return partial(
            _longrope_freq,
            factors=tuple(scaling["ext_factors"]),
            attention_factor=float(scaling["attention_factor"]),
        )
    if kind == "linear":
        return partial(_linear_freq, factor=float(scaling["factor"]))
    return switch_rope_freq_func(scaling)


def rope_for_context(scaling: dict[str, Any], context_window: int) -> dict[str, Any]:
    """The RoPE parameters a model compiled for `context_window` tokens uses.

    LongRoPE has short factors for contexts within the pretraining length and long ones past
    it; as llama.cpp does, the compiled context decides (transformers switches per call by the
    sequence's length, which a compiled model with cached keys cannot)."""
    if scaling.get("rope_type") != "longrope":
        return scaling
    original = int(scaling["original_max_position_embeddings"])
    factors = scaling["long_factor" if context_window > original else "short_factor"]
    return {
        "rope_type": "longrope",
        "ext_factors": list(factors),
        "attention_factor": scaling["attention_factor"],
    }


def longrope_attention_factor(factor: float, original: int) -> float:
    """The cos/sin scale LongRoPE uses by default for a context `factor` x the original."""
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))


# Block annotation with the RoPE parameters, so target passes can fuse RoPE into other kernels.
ROPE_ATTR = "mlcx.rope"


def rope_te(
    x: te.Tensor,
    positions: te.Tensor,
    theta: float,
    rope_scaling: dict[str, Any],
    rotary_dim: int | None = None,
) -> te.Tensor:
    """x [tokens, heads, head_dim] rotated in the GPT-NeoX "half split" layout used by Llama."""
    head_dim = int(x.shape[2])
    rotary = rotary_dim or head_dim
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
