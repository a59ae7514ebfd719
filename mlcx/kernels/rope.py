"""Rotary position embedding applied by explicit per-token positions.

Positions come from the KV cache manager (one int32 per new token), so ragged batches, cached
prefixes and decode steps all rotate correctly. The frequency formulas (default, llama3, yarn,
...) are TVM's; this module only applies them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tvm import te, tirx
from tvm.relax.frontend.nn.llm.position_embedding import switch_rope_freq_func


@dataclass(frozen=True)
class RopeParams:
    theta: float
    scaling: dict[str, Any]
    rotary_dim: int

    def __hash__(self) -> int:
        return hash((self.theta, repr(sorted(self.scaling.items())), self.rotary_dim))


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
    freq = switch_rope_freq_func(rope_scaling)

    def rotate(s, h, d):
        cos, sin, lets = freq(positions[s].astype("float32"), d, rotary, theta, "float32")
        partner = tirx.if_then_else(d < half, -x[s, h, d + half], x[s, h, d - half])
        value = cos * x[s, h, d].astype("float32") + sin * partner.astype("float32")
        for var, bound in lets.items():
            value = tirx.Let(var, bound, value)
        return tirx.if_then_else(d < rotary, value.astype(x.dtype), x[s, h, d])

    params = {"theta": theta, "scaling": rope_scaling, "rotary_dim": rotary}
    return te.compute(x.shape, rotate, name="rope", attrs={ROPE_ATTR: json.dumps(params)})
