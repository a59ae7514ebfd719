"""Image embedding rows put in place of the image tokens' embeddings (prefill_image)."""

from __future__ import annotations

from tvm import te, tirx


def replace_rows_te(x: te.Tensor, rows: te.Tensor, embeds: te.Tensor) -> te.Tensor:
    """out[i] = embeds[rows[i]] where rows[i] >= 0, else x[i] (rows come from the runtime and
    are in range)."""

    def value(i, c):
        row = rows[i]
        picked = embeds[tirx.max(row, 0), c].astype(x.dtype)
        return tirx.Select(row >= 0, picked, x[i, c])

    return te.compute(x.shape, value, name="image_rows")


def add_rows_te(x: te.Tensor, rows: te.Tensor, embeds: te.Tensor, offset: int) -> te.Tensor:
    """out[i] = x[i] + embeds[rows[i], offset:offset + width] where rows[i] >= 0, else x[i]:
    a later block of an image row's features joins its token's hidden state (Qwen3-VL's
    deepstack)."""

    def value(i, c):
        row = rows[i]
        added = x[i, c] + embeds[tirx.max(row, 0), c + offset].astype(x.dtype)
        return tirx.Select(row >= 0, added, x[i, c])

    return te.compute(x.shape, value, name="image_rows_add")
