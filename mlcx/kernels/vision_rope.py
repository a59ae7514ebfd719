"""The 2-D pieces of a Qwen-VL vision tower, as TE computes: RoPE by each patch's (row,
column) and the additive mask of window attention.

2-D RoPE (half-split layout): each head's first half of feature pairs turn by the patch's row,
the second half by its column, both with the inverse frequencies of a RoPE over head_dim / 2
features (transformers' VisionRotaryEmbedding: freqs = cat(row * inv, col * inv), repeated).
"""

from __future__ import annotations

from tvm import te, tirx

NEG = {"float32": -3.0e38, "float16": -65504.0}  # masked scores: exp() of them is 0


def rope_table_te(positions: te.Tensor, head_dim: int, theta: float) -> te.Tensor:
    """[2, patches, head_dim / 2]: the cos (0) and sin (1) of each patch's angle per feature
    pair, made once per image: every layer turns its q and k by the same angles."""
    half, quarter = head_dim // 2, head_dim // 4

    def angle(s, pair):
        axis = tirx.Select(pair < quarter, tirx.const(0, "int32"), tirx.const(1, "int32"))
        k = (pair % quarter).astype("float32")
        inv = 1.0 / tirx.power(tirx.const(theta, "float32"), k * 2.0 / float(half))
        return positions[s, axis].astype("float32") * inv

    def value(part, s, pair):
        turned = angle(s, pair)
        return tirx.Select(part == 0, tirx.cos(turned), tirx.sin(turned))

    return te.compute((2, positions.shape[0], half), value, name="rope_table")


def vision_rope_te(x: te.Tensor, table: te.Tensor) -> te.Tensor:
    """x [patches, heads, head_dim] rotated by its patches' rope_table_te angles."""
    half = int(x.shape[2]) // 2

    def rotate(s, h, d):
        pair = d % half
        partner = tirx.if_then_else(d < half, -x[s, h, d + half], x[s, h, d - half])
        value = table[0, s, pair] * x[s, h, d].astype("float32")
        value = value + table[1, s, pair] * partner.astype("float32")
        return value.astype(x.dtype)

    return te.compute(x.shape, rotate, name="vision_rope")


def window_bias_te(windows: te.Tensor, dtype: str) -> te.Tensor:
    """[patches, patches]: 0 where the two patches share a window (windows [patches] holds each
    one's window id), else a score no softmax weighs."""
    n = windows.shape[0]
    masked = tirx.const(NEG[dtype], dtype)
    zero = tirx.const(0.0, dtype)
    return te.compute(
        (n, n),
        lambda i, j: tirx.Select(windows[i] == windows[j], zero, masked),
        name="window_bias",
    )
