"""Where the Qwen-VL encoder's weights live in a checkpoint: under `visual.` (Qwen2.5-VL) or
`model.visual.` (Qwen3-VL) with the module names. The patch projection is a convolution over
(channels, 2 frames, patch, patch); a still image is its own second frame, so the two frames'
kernels are summed into one matrix over (channels, patch, patch)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from mlcx.errors import ModelSourceError
from mlcx.frontends.tensors import TensorSource

_PREFIXES = ("visual.", "model.visual.")
_TOWER = "visual."
PATCH = "visual.patch_embed.proj.weight"


def fold_frames(kernel: np.ndarray) -> np.ndarray:
    """[hidden, channels, frames, p, p] (or already folded) -> [hidden, channels * p * p]."""
    if kernel.ndim == 5:
        kernel = kernel.sum(axis=2, dtype=np.float32)
    return kernel.reshape(kernel.shape[0], -1)


def _prefix(names: set[str]) -> str:
    for prefix in _PREFIXES:
        if prefix + "patch_embed.proj.weight" in names:
            return prefix
    raise ModelSourceError("the checkpoint has no Qwen-VL vision tower (visual.patch_embed.*)")


def encoder_arrays(
    params: list[str], tensors: TensorSource, dtype: str
) -> Iterator[tuple[str, np.ndarray]]:
    prefix = _prefix(set(tensors.names()))
    for param in params:
        array = np.asarray(tensors.get(prefix + param[len(_TOWER) :]).to_float(), np.float32)
        if param == PATCH:
            array = fold_frames(array)
        yield param, np.ascontiguousarray(array.astype(dtype))
