"""Multimodal RoPE (M-RoPE, Qwen2-VL onward): each token has three positions, temporal, height
and width (a text token's three are equal; an image token's are its image's start and its row
and column in the merged patch grid), and each feature pair of a head turns by one of them.

Which one is a constant table over the pairs, from the model's `mrope_section` [t, h, w]
(pair counts that sum to rotary_dim / 2):
- contiguous (Qwen2-VL, Qwen2.5-VL): the first t pairs by time, the next h by height, the
  last w by width;
- interleaved (Qwen3-VL): pair j by height where j % 3 == 1 and j < 3h, by width where
  j % 3 == 2 and j < 3w, else by time.

The rotation itself (mlcx.kernels.mrope_te) is the half-split RoPE of mlcx.kernels.rope with
the chosen position. No TVM here: configs and the runtime read these.
"""

from __future__ import annotations

from collections.abc import Sequence

AXES = 3  # positions per token: time, height, width


def mrope_axes(sections: Sequence[int], interleaved: bool) -> tuple[int, ...]:
    """The position row (0 time, 1 height, 2 width) each feature pair turns by."""
    t, h, w = sections
    pairs = t + h + w
    if not interleaved:
        return (0,) * t + (1,) * h + (2,) * w
    axes = [0] * pairs
    for j in range(pairs):
        if j % 3 == 1 and j < 3 * h:
            axes[j] = 1
        elif j % 3 == 2 and j < 3 * w:
            axes[j] = 2
    return tuple(axes)


def check_sections(sections: Sequence[int], rotary_dim: int) -> None:
    """Three non-negative pair counts covering the rotary features (ValueError otherwise)."""
    if len(sections) != AXES or any(not isinstance(s, int) or s < 0 for s in sections):
        raise ValueError(f"M-RoPE needs three non-negative section sizes, got {list(sections)}")
    if 2 * sum(sections) != rotary_dim:
        raise ValueError(
            f"M-RoPE sections {list(sections)} cover {2 * sum(sections)} features; RoPE "
            f"rotates {rotary_dim}: the config's mrope_section does not fit head_dim"
        )
