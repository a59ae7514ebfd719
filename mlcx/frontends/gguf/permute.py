"""llama.cpp's converter reorders the q/k rows of `llama` (and Mixtral) files for its
interleaved RoPE; mlcx's RoPE takes the half-split layout Hugging Face keeps."""

from __future__ import annotations

import numpy as np

from mlcx.frontends.weight_spec import RowTransform


def unpermute_rows(heads: int) -> RowTransform:
    """Undo the conversion-time reordering of q/k rows: llama.cpp stores each head's rows as
    (pairs, 2) interleaved, Hugging Face keeps the two halves of a head apart. Works on float
    rows and on raw block rows alike."""

    def apply(rows: np.ndarray) -> np.ndarray:
        n = rows.shape[0]
        grouped = rows.reshape(heads, n // heads // 2, 2, *rows.shape[1:])
        return grouped.swapaxes(1, 2).reshape(rows.shape)

    return apply
