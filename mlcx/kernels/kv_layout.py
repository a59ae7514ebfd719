"""The KV pages of one layer, laid out the same way on every target.

`[num_pages, 2, num_kv_heads, page_size, head_dim]`: page id first (the page tables index it),
keys at index 0 and values at 1 of the second dimension. The model exports its step functions
with pages of this shape, the runners allocate them with it, and a WebGPU plan records it in
each function's `kv_pages` input, where the browser runtime reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

NUM_PAGES = "num_pages"  # the page count of an exported function's kv_pages (a shape variable)
N = TypeVar("N")


def kv_pages_shape(
    num_pages: N, num_kv_heads: int, page_size: int, head_dim: int
) -> tuple[N | int, ...]:
    """One layer's pages; `num_pages` may be an int, a name or a TIR variable."""
    return (num_pages, 2, num_kv_heads, page_size, head_dim)


@dataclass(frozen=True)
class KVLayout:
    """The attention geometry and dtypes one model's paged-KV kernels are built for."""

    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    page_size: int
    dtype: str  # the activations'
    cache_dtype: str  # the pages'

    def pages_shape(self, num_pages: int | str) -> tuple[int | str, ...]:
        return kv_pages_shape(num_pages, self.num_kv_heads, self.page_size, self.head_dim)

    def pages_bytes(self, num_pages: int) -> int:
        """Bytes of `num_pages` pages of one layer."""
        return math.prod(self.pages_shape(num_pages)) * np.dtype(self.cache_dtype).itemsize
