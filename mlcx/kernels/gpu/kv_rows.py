"""How GPU kernels read and write one row of the KV pages, for every cache dtype.

A float row is head_dim elements of the cache dtype, read and written with a cast. An int8 row
is uint32 words (mlcx.kernels.kv_layout): word w holds features 4w .. 4w + 3, feature 4w + b
in bits 8b .. 8b + 7 (the little-endian bytes of the CPU's int8 row), and word head_dim / 4 is
the row's float32 scale; x ~ scale * q with scale = max|x| / 127 (llama.cpp's q8_0 per row).
A lane that reads words reads whole words, so its features come in runs of four
(`feature`), and the lanes of a unit read consecutive words (coalesced).
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.kv_layout import (
    NUM_PAGES,
    kv_cache_dtype,
    kv_element,
    kv_pages_shape,
    kv_row,
)

QMAX = 127.0  # symmetric int8: -127 .. 127
PACK = 4  # features in a word


def _u32(value: int) -> tirx.IntImm:
    return tirx.IntImm("uint32", value)


def _f32(value: float) -> tirx.FloatImm:
    return tirx.FloatImm("float32", value)


def unpack(word) -> list:
    """The four sign-extended features of a word, as float32."""
    out = []
    for b in range(PACK):
        byte = T.bind(T.Cast("int32", (word >> _u32(8 * b)) & _u32(0xFF)))
        out.append(T.Cast("float32", byte - ((byte & 0x80) << 1)))
    return out


def pack(values, top):
    """(word of the four values quantized by the row's max magnitude `top`, the scale word)."""
    inv = T.bind(T.Select(top > _f32(0.0), _f32(QMAX) / top, _f32(0.0)))
    word = None
    for b, value in enumerate(values):
        code = T.Cast("uint32", T.Cast("int32", T.nearbyint(value * inv))) & _u32(0xFF)
        part = code << _u32(8 * b) if b else code
        word = part if word is None else word | part
    return word, tirx.reinterpret("uint32", top / _f32(QMAX))


class GpuRows:
    """The pages of one layout as GPU kernels see them."""

    def __init__(self, h_kv: int, d: int, page_size: int, cache_dtype: str):
        self.h_kv, self.d, self.page_size = h_kv, d, page_size
        self.cache_dtype = cache_dtype
        self.packed = kv_cache_dtype(cache_dtype).gpu_words
        self.element = kv_element(cache_dtype, "gpu")
        self.row = kv_row(d, cache_dtype, "gpu")

    @property
    def per_element(self) -> int:
        """Features in one element of a row."""
        return PACK if self.packed else 1

    @property
    def words(self) -> int:
        """Elements of a row's features (the scale word comes after them)."""
        return self.d // self.per_element

    def param(self, name: str = "pages") -> tirx.Buffer:
        """Declare the pages parameter (inside a prim_func frame, among the other params)."""
        shape = kv_pages_shape(tirx.Var(NUM_PAGES, "int64"), self.h_kv, self.page_size, self.row)
        return T.match_buffer(T.arg(name, T.handle()), shape, self.element)

    def feature(self, lane, share: int, e: int):
        """The feature a unit lane holds as its e-th value: every share-th element of the row
        from `lane` on, each element's features in a run."""
        n = self.per_element
        return n * (lane + share * (e // n)) + e % n

    def read(self, pages, page, kv: int, head, slot, lane, share: int, per: int):
        """(the lane's `per` features as float32, in `feature` order; the row's scale or None)."""
        if not self.packed:
            index = [page, kv, head, slot]
            return [
                T.bind(pages[(*index, self.feature(lane, share, e))].astype("float32"))
                for e in range(per)
            ], None
        values = []
        for w in range(per // PACK):
            word = T.bind(pages[page, kv, head, slot, lane + share * w])
            values += [T.bind(v) for v in unpack(word)]
        # the word is bound, not the float: TVM's int-set analysis fails on a bound reinterpret
        scale = tirx.reinterpret("float32", T.bind(pages[page, kv, head, slot, self.words]))
        return values, scale

    def store(self, pages, page, kv, head, slot, element, values, top=None) -> None:
        """Write element `element` of a row: `values` holds its per_element features (float32);
        a packed row also needs `top`, its max magnitude, and element 0 writes the scale."""
        index = [page, kv, head, slot]
        if not self.packed:
            T.buffer_store(pages, values[0].astype(self.element), [*index, element])
            return
        word, scale = pack(values, top)
        T.buffer_store(pages, word, [*index, element])
        with T.If(element == 0), T.Then():
            T.buffer_store(pages, scale, [*index, self.words])
