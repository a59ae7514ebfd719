"""The KV pages of one layer: one shape and one byte size on every target.

`[num_pages, 2, num_kv_heads, page_size, row]`: page id first (the page tables index it),
keys at index 0 and values at 1 of the second dimension. A row (one token's key or value of one
kv head) is head_dim features, then for a quantized cache dtype the 4 bytes of its float32
scale. The pages' element type is the kernels' (`kv_element`): the cache dtype itself, except
that GPU kernels hold 8-bit rows as uint32 words (WGSL has no 8-bit type), four features a
word in little-endian byte order, the scale its own last word; `row` counts those elements.
The byte size of a page is the same for every element type; how a (page, key-or-value, head)
slab arranges its bytes is the kernels' business (CPU pages hold keys transposed), since
runners only allocate and copy whole pages. The model exports its step functions with pages of
this shape and element, the runners allocate them with it, and a WebGPU plan records it in
each function's `kv_pages` input, where the browser runtime reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

NUM_PAGES = "num_pages"  # the page count of an exported function's kv_pages (a shape variable)
KERNEL_KINDS = ("cpu", "gpu")
WORD = "uint32"  # a GPU word of four 8-bit features
N = TypeVar("N")


@dataclass(frozen=True)
class KVCacheDtype:
    """How one KV cache dtype stores a row (one token's key or value of one kv head)."""

    scale_bytes: int = 0  # of the row's float32 scale after its features; 0: not quantized
    gpu_words: bool = False  # GPU kernels store the rows as uint32 words (4 features a word)

    @property
    def quantized(self) -> bool:
        return self.scale_bytes > 0


# int8 is llama.cpp's q8_0 idea per row: symmetric, scale = max|x| / 127, x ~ scale * q.
KV_CACHE_DTYPES: dict[str, KVCacheDtype] = {
    "float16": KVCacheDtype(),
    "float32": KVCacheDtype(),
    "int8": KVCacheDtype(scale_bytes=4, gpu_words=True),
}


# The KV dtype an artifact gets when the user names none, by kernel kind. CPU: f16 whatever the
# math's dtype, as llama.cpp's default: decode at long contexts reads the cache more than the
# weights, and f16 halves it (logits move by ~1e-5..1e-3 against f32 pages; tests/models/
# test_kv_dtype.py). GPU kernels: the math's dtype (None).
DEFAULT_KV_DTYPES: dict[str, str | None] = {"cpu": "float16", "gpu": None}


def default_kv_dtype(kernel_kind: str, activation_dtype: str) -> str:
    return DEFAULT_KV_DTYPES[kernel_kind] or activation_dtype


def kv_cache_dtype(dtype: str) -> KVCacheDtype:
    if dtype not in KV_CACHE_DTYPES:
        raise ValueError(
            f"KV cache dtype must be one of {', '.join(KV_CACHE_DTYPES)}, not {dtype!r}"
        )
    return KV_CACHE_DTYPES[dtype]


def kv_element(dtype: str, kernel_kind: str = "cpu") -> str:
    """The element type of the pages for a cache dtype and kernel kind ("cpu" or "gpu")."""
    if kernel_kind not in KERNEL_KINDS:
        kinds = ", ".join(KERNEL_KINDS)
        raise ValueError(f"kernel kind must be one of {kinds}, not {kernel_kind!r}")
    return WORD if kernel_kind == "gpu" and kv_cache_dtype(dtype).gpu_words else dtype


def kv_row(head_dim: int, dtype: str, kernel_kind: str = "cpu") -> int:
    """Elements (of kv_element) of one stored row: the features, then the scale's bytes."""
    row_bytes = head_dim * np.dtype(dtype).itemsize + kv_cache_dtype(dtype).scale_bytes
    return row_bytes // np.dtype(kv_element(dtype, kernel_kind)).itemsize


def kv_pages_shape(
    num_pages: N, num_kv_heads: int, page_size: int, row: int
) -> tuple[N | int, ...]:
    """One layer's pages; `num_pages` may be an int, a name or a TIR variable; `row` as kv_row."""
    return (num_pages, 2, num_kv_heads, page_size, row)


@dataclass(frozen=True)
class KVLayout:
    """The attention geometry and dtypes one model's paged-KV kernels are built for."""

    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    page_size: int
    dtype: str  # the activations'
    cache_dtype: str  # what the pages hold
    kernel_kind: str = "cpu"  # whose kernels read them: "cpu" or "gpu"

    def __post_init__(self) -> None:
        if kv_cache_dtype(self.cache_dtype).quantized and self.head_dim % 4:
            # the float32 scales sit at 4-byte-aligned offsets only if head_dim is a multiple of 4
            raise ValueError(
                f"a {self.cache_dtype} KV cache needs head_dim % 4 == 0, not {self.head_dim}"
            )
        kv_element(self.cache_dtype, self.kernel_kind)

    @property
    def element(self) -> str:
        return kv_element(self.cache_dtype, self.kernel_kind)

    @property
    def row(self) -> int:
        return kv_row(self.head_dim, self.cache_dtype, self.kernel_kind)

    def pages_shape(self, num_pages: int | str) -> tuple[int | str, ...]:
        return kv_pages_shape(num_pages, self.num_kv_heads, self.page_size, self.row)

    def pages_bytes(self, num_pages: int) -> int:
        """Bytes of `num_pages` pages of one layer (quantized rows: features and scales)."""
        return math.prod(self.pages_shape(num_pages)) * np.dtype(self.element).itemsize
