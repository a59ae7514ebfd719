"""RMS normalization without a weight (Gemma 4's values), as a tensor expression every target
lowers: a graph constant of ones for nn's rms_norm would be a value the WebGPU plan cannot
hold."""

from __future__ import annotations

from tvm import te, tirx


def rms_normalize_te(x: te.Tensor, eps: float) -> te.Tensor:
    """x / sqrt(mean(x^2) + eps) over the last axis, computed in float32."""
    *lead, dim = x.shape
    k = te.reduce_axis((0, dim), name="k")

    def squares(*index):
        value = x[(*index, k)].astype("float32")
        return te.sum(value * value, axis=k)

    total = te.compute(lead, squares, name="rms_sum")

    def normalized(*index):
        scale = tirx.rsqrt(
            total[index[:-1]] / tirx.Cast("float32", dim) + tirx.const(eps, "float32")
        )
        return (x[index].astype("float32") * scale).astype(x.dtype)

    return te.compute(x.shape, normalized, name="rms_normalize")
