"""Where the encoder's weights live in an Idefics3ForConditionalGeneration checkpoint: under
`model.` with the module names; the patch convolution's kernel becomes a matrix."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from mlcx.frontends.tensors import TensorSource

PREFIX = "model."
_PATCH = "vision_model.embeddings.patch_embedding.weight"


def encoder_arrays(
    params: list[str], tensors: TensorSource, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    for param in params:
        array = np.asarray(tensors.get(PREFIX + param).to_float(), dtype=np.float32)
        if param == _PATCH:
            array = array.reshape(array.shape[0], -1)
        yield param, np.ascontiguousarray(array.astype(dtype))
