"""Matmul and embedding lookup that read weights in their stored format.

Dequantization is an expression inside the consuming compute, so each linear layer is one
kernel whatever its weight format.
"""

from __future__ import annotations

from tvm import te

from mlcx.quantization.formats import WeightFormat

ACCUMULATE = "float32"
# Block annotation naming the weight format, so target passes can find and replace linears.
LINEAR_ATTR = "mlcx.linear"


def matmul_te(
    x: te.Tensor, weights: dict[str, te.Tensor], fmt: WeightFormat, out_features: int
) -> te.Tensor:
    """y [tokens, out] = x [tokens, in] @ W.T, W read through `fmt`; accumulates in f32."""
    tokens, in_features = x.shape
    k = te.reduce_axis((0, in_features), name="k")

    def dot(t, n):
        w = fmt.element(weights, n, k, ACCUMULATE)
        return te.sum(x[t, k].astype(ACCUMULATE) * w, axis=k)

    acc = te.compute((tokens, out_features), dot, name="matmul", attrs={LINEAR_ATTR: fmt.name})
    if x.dtype == ACCUMULATE:
        return acc
    return te.compute(acc.shape, lambda t, n: acc[t, n].astype(x.dtype), name="matmul_cast")


def embedding_te(
    ids: te.Tensor, weights: dict[str, te.Tensor], fmt: WeightFormat, hidden: int, dtype: str
) -> te.Tensor:
    """Rows of the embedding table for `ids`, dequantized."""
    return te.compute(
        (ids.shape[0], hidden),
        lambda t, c: fmt.element(weights, ids[t], c, dtype),
        name="embedding",
    )


def gather_rows_te(x: te.Tensor, rows: te.Tensor) -> te.Tensor:
    """x[rows[i], :] for each i (row indices come from the runtime and are in range)."""
    return te.compute((rows.shape[0], x.shape[1]), lambda i, c: x[rows[i], c], name="gather")
