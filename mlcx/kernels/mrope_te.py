"""M-RoPE as a TE compute (mlcx.kernels.mrope says which position each feature pair takes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tvm import te, tirx

from mlcx.kernels.mrope import check_sections, mrope_axes
from mlcx.kernels.rope import check_rotary, rope_freq_func


def _axis(pair: tirx.PrimExpr, axes: tuple[int, ...]) -> tirx.PrimExpr:
    """axes[pair] as a balanced tree of selects over runs of equal axes."""
    runs: list[tuple[int, int]] = []  # (first pair, axis)
    for j, axis in enumerate(axes):
        if not runs or runs[-1][1] != axis:
            runs.append((j, axis))
    return _select(pair, runs)


def _select(pair: tirx.PrimExpr, runs: list[tuple[int, int]]) -> tirx.PrimExpr:
    if len(runs) == 1:
        return tirx.const(runs[0][1], "int32")
    mid = len(runs) // 2
    return tirx.Select(pair < runs[mid][0], _select(pair, runs[:mid]), _select(pair, runs[mid:]))


def mrope_te(
    x: te.Tensor,
    positions: te.Tensor,
    theta: float,
    scaling: dict[str, Any],
    sections: Sequence[int],
    interleaved: bool,
    rotary_dim: int | None = None,
) -> te.Tensor:
    """x [tokens, heads, head_dim] rotated by positions [3, tokens] (half-split layout, the
    RoPE's base and scaling as mlcx.kernels.rope); the features past `rotary_dim` (None: all
    rotate) are copied."""
    head_dim = int(x.shape[2])
    rotary = rotary_dim or head_dim
    check_rotary(rotary, head_dim)
    check_sections(sections, rotary)
    half = rotary // 2
    axes = mrope_axes(sections, interleaved)
    freq = rope_freq_func(scaling)

    def rotate(s, h, d):
        pos = positions[_axis(d % half, axes), s].astype("float32")
        cos, sin, lets = freq(pos, d, rotary, theta, "float32")
        partner = tirx.if_then_else(d < half, -x[s, h, d + half], x[s, h, d - half])
        value = cos * x[s, h, d].astype("float32") + sin * partner.astype("float32")
        for var, bound in lets.items():
            value = tirx.Let(var, bound, value)
        return tirx.if_then_else(d < rotary, value.astype(x.dtype), x[s, h, d])

    return te.compute(x.shape, rotate, name="mrope")
