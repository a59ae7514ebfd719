"""The CPU kernels' layout inside a KV page, and the kernel that appends keys and values.

Pages keep the shape every target uses (mlcx.kernels.kv_layout), so the runtime
allocates and copies them without knowing the target. Inside one (page, kv head) slab the CPU
kernels store keys transposed, element (feature c, slot s) at c * page_size + s, so that the
scores of a whole page are one vector FMA per feature; values stay [slot, feature].
Only CPU kernels (append, rope_append, attention) read or write keys; copy_pages moves whole
pages and is layout-agnostic.

An int8 slab holds the page_size * head_dim quantized features first, laid out as above, then
the page_size float32 scales of its rows in slot order (the pages' last dimension is
head_dim + 4, so the bytes are those of a scale at the end of each row). The scales sit
together rather than after each row because keys are transposed: the kernels multiply a
whole page's scores, one per slot, by one vector load of its key scales.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.kv_layout import NUM_PAGES, kv_cache_dtype, kv_pages_shape, kv_row

# PrimFunc attribute naming an mlcx kernel, so graph passes can recognize calls to it.
KERNEL_ATTR = "mlcx.kernel"


@dataclass(frozen=True)
class PageViews:
    """The pages as one flat buffer of their dtype, and for a quantized dtype as float32
    (the scales); None otherwise."""

    flat: tirx.Buffer
    scales: tirx.Buffer | None


@dataclass(frozen=True)
class PageGeometry:
    h_kv: int
    head_dim: int
    page_size: int
    dtype: str  # of the pages
    act_dtype: str = ""  # of the q/k/v/output activations; "" means the pages' dtype

    @property
    def io_dtype(self) -> str:
        return self.act_dtype or self.dtype

    @property
    def quantized(self) -> bool:
        return kv_cache_dtype(self.dtype).quantized

    @property
    def slab(self) -> int:
        """Elements of one (page, key-or-value, kv head) slab."""
        return self.page_size * kv_row(self.head_dim, self.dtype)

    def pages_param(self, name: str = "pages") -> tirx.Buffer:
        """Declare the pages parameter (inside a prim_func frame, among the other params)."""
        num_pages = tirx.Var(NUM_PAGES, "int64")
        row = kv_row(self.head_dim, self.dtype)
        shape = kv_pages_shape(num_pages, self.h_kv, self.page_size, row)
        return T.match_buffer(T.arg(name, T.handle()), shape, self.dtype)

    def views(self, pages: tirx.Buffer) -> PageViews:
        """Flat views of the pages (declare after all parameters)."""
        size = pages.shape[0] * 2 * self.h_kv * self.slab
        flat = T.decl_buffer((size,), self.dtype, data=pages.data)
        if not self.quantized:
            return PageViews(flat, None)
        # slab bytes are a multiple of 4 (KVLayout checks head_dim % 4), so this view is aligned
        return PageViews(flat, T.decl_buffer((size // 4,), "float32", data=pages.data))

    def key_base(self, page, head):
        return T.Cast("int64", (page * 2 * self.h_kv + head)) * self.slab

    def value_base(self, page, head):
        return T.Cast("int64", ((page * 2 + 1) * self.h_kv + head)) * self.slab

    def key_scales(self, page, head):
        """Index in PageViews.scales of the scale of slot 0 of a key slab."""
        features = self.page_size * self.head_dim // 4
        return T.Cast("int64", (page * 2 * self.h_kv + head)) * (self.slab // 4) + features

    def value_scales(self, page, head):
        features = self.page_size * self.head_dim // 4
        return T.Cast("int64", ((page * 2 + 1) * self.h_kv + head)) * (self.slab // 4) + features


QMAX = 127.0  # symmetric int8: -127 .. 127


def quantize_row(x, d: int):
    """(int8 x d, float32 scale) with x ~ scale * q; an all-zero row gets scale 0."""
    x = T.bind(x)
    top = T.bind(vec.hmax(T.max(x, -x), d))
    inv = T.Select(top > vec.f32(0.0), vec.f32(QMAX) / top, vec.f32(0.0))
    q = T.Cast(vec.vtype("int8", d), T.nearbyint(x * vec.splat(T.bind(inv), d)))
    return q, top / vec.f32(QMAX)


def store_kv(geo: PageGeometry, views: PageViews, slot, head, key, value) -> None:
    """Write one token's key and value (float32 x d vectors) for one kv head at `slot`."""
    page, offset = slot // geo.page_size, slot % geo.page_size
    d, flat = geo.head_dim, views.flat
    if views.scales is not None:
        key, key_scale = quantize_row(key, d)
        value, value_scale = quantize_row(value, d)
        T.buffer_store(views.scales, key_scale, [geo.key_scales(page, head) + offset])
        T.buffer_store(views.scales, value_scale, [geo.value_scales(page, head) + offset])
    key_store = T.bind(T.Cast(vec.vtype(geo.dtype, d), key))
    for c in range(d):
        index = geo.key_base(page, head) + c * geo.page_size + offset
        T.buffer_store(flat, T.Shuffle([key_store], [c]), [index])
    start = geo.value_base(page, head) + offset * d
    T.buffer_store(flat, T.Cast(vec.vtype(geo.dtype, d), value), [vec.ramp(start, d)])


def kv_append_cpu(
    h_kv: int, head_dim: int, dtype: str, page_size: int, act_dtype: str = ""
) -> tirx.PrimFunc:
    """pages[slots[t]] <- k[t], v[t] for every token whose slot is not -1 (in place)."""
    geo = PageGeometry(h_kv, head_dim, page_size, dtype, act_dtype)
    with IRBuilder() as ib, T.prim_func():
        T.func_name("kv_append_cpu")
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, KERNEL_ATTR: "kv_append_cpu"})
        tokens = tirx.Var("tokens", "int64")
        pages = geo.pages_param()
        k = T.match_buffer(T.arg("k", T.handle()), (tokens, h_kv, head_dim), geo.io_dtype)
        v = T.match_buffer(T.arg("v", T.handle()), (tokens, h_kv, head_dim), geo.io_dtype)
        slots = T.match_buffer(T.arg("slots", T.handle()), (tokens,), "int32")
        views = geo.views(pages)
        with T.serial(0, tokens) as t, T.serial(0, h_kv) as h, T.If(slots[t] >= 0), T.Then():
            key = vec.to_f32(k[t, h, vec.ramp(0, head_dim)])
            value = vec.to_f32(v[t, h, vec.ramp(0, head_dim)])
            store_kv(geo, views, slots[t], h, key, value)
    return ib.get()
