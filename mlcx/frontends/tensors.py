"""Tensors as a model source offers them, read lazily one at a time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from gguf import GGMLQuantizationType


@dataclass(frozen=True)
class SourceTensor:
    """One stored tensor.

    `shape` is the logical shape, rows first ([out_features, in_features] for a matrix).
    `load()` returns the stored data: a float array for float tensors; for GGUF block types,
    the raw blocks as uint8 [rows, bytes_per_row] (rows stay independent, so row operations
    such as concatenation and permutation apply to blocks unchanged).
    """

    name: str
    shape: tuple[int, ...]
    gguf_type: GGMLQuantizationType | None
    load: Callable[[], np.ndarray]
    to_float: Callable[[], np.ndarray]


class TensorSource(Protocol):
    def names(self) -> list[str]: ...

    def get(self, name: str) -> SourceTensor: ...
