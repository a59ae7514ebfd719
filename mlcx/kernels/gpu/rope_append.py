"""RoPE on the fused qkv projection plus the KV append, as one GPU kernel.

Replaces reshape -> split -> rope(q), rope(k) -> kv_append (five kernels a layer): a workgroup
per token, one thread per pair of features (`_Pairs`) and head group; the cos/sin of a pair are
evaluated once per thread (TVM's frequency formulas, as mlcx.kernels.rope uses) and applied to
every head it visits. With partial rotary (rotary_dim r < d) the first r / 2 threads turn the
rotation pairs (i, i + r/2) and the others carry the pass-through features two at a time with
cos 1 and sin 0, so every thread runs the same code. q goes to its own output, k is rotated
straight into the pages and v is copied there, at the token's slot (-1: no write). Consecutive
threads touch consecutive features (coalesced).

With q/k norms (Qwen3: an RMSNorm over each q and k head before RoPE, weights as two extra [d]
inputs after slots) the threads of a head first sum their squares through shared memory.

The pages may hold another dtype than the activations (mlcx.kernels.gpu.kv_rows). Int8 rows
are words of four consecutive features, which four threads of a rotation pair compute: the
threads put their rotated (or copied) values and magnitudes in shared memory, and past a
barrier the first d / 4 threads of each head quantize a word each.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.gpu.kv_append import magnitude, row_max
from mlcx.kernels.gpu.kv_rows import PACK, GpuRows
from mlcx.kernels.rope import RopeParams, check_rotary, rope_freq_func

THREADS = 128


@dataclass(frozen=True)
class _HeadNorm:
    q: tirx.Buffer  # [d] weights of the q heads
    k: tirx.Buffer  # [d] weights of the k heads
    eps: float
    sums: tirx.Buffer  # shared, one a^2 + b^2 per thread
    total: tirx.Buffer  # local accumulator

    def apply(self, a, b, h, h_q: int, pair: tuple, group, half: int):
        """(a, b) * rsqrt(mean of the head's squares + eps) * the head's weights; `pair` is
        (thread index, feature of a, feature of b). Every thread of the workgroup must call it:
        it holds two barriers."""
        i, lo, hi = pair
        T.buffer_store(self.sums, a * a + b * b, [group * half + i])
        T.evaluate(T.tvm_storage_sync("shared"))
        T.buffer_store(self.total, tirx.const(0.0, "float32"), [0])
        with T.serial(0, half) as j:
            T.buffer_store(self.total, self.total[0] + self.sums[group * half + j], [0])
        T.evaluate(T.tvm_storage_sync("shared"))
        mean = self.total[0] / tirx.const(2 * half, "float32")
        scale = T.bind(tirx.const(1.0, "float32") / T.sqrt(mean + tirx.const(self.eps, "float32")))

        def weight(f):
            return T.Select(h < h_q, self.q[f], self.k[f]).astype("float32")

        return T.bind(a * scale * weight(lo)), T.bind(b * scale * weight(hi))


def _head_norm(weights: tuple | None, eps: float | None, threads: int) -> _HeadNorm | None:
    """The norm with its scratch buffers (declared inside the launch), or None without norms."""
    if weights is None or eps is None:
        return None
    sums = T.alloc_buffer((threads,), "float32", scope="shared")
    total = T.alloc_buffer((1,), "float32", scope="local")
    return _HeadNorm(*weights, eps, sums, total)


def _params(h_q: int, h_kv: int, d: int, rows: GpuRows, dtype: str, norm: bool):
    tokens = tirx.Var("tokens", "int64")
    width = (h_q + 2 * h_kv) * d

    def param(name, shape, dt):
        return T.match_buffer(T.arg(name, T.handle()), shape, dt)

    qkv = param("qkv", (tokens, width), dtype)
    positions = param("positions", (tokens,), "int32")
    pages = rows.param()
    slots = param("slots", (tokens,), "int32")
    weights = (param("q_norm", (d,), dtype), param("k_norm", (d,), dtype)) if norm else None
    q_out = param("q", (tokens, h_q, d), dtype)
    return tokens, qkv, positions, pages, slots, weights, q_out


@dataclass(frozen=True)
class _Pairs:
    """Which two features of a head thread i (0 <= i < d/2) holds: the rotation pair
    (i, i + r/2) for i < r/2, else the pass-through features r + j and r + j + (d - r)/2 for
    j = i - r/2. A whole-head RoPE (r = d) has only rotation pairs."""

    d: int
    rotary: int

    def features(self, i):
        half = self.rotary // 2
        if self.rotary == self.d:
            return i, i + half
        rest = (self.d - self.rotary) // 2
        rotates = i < half
        lo = T.bind(T.Select(rotates, i, i + half))
        return lo, T.bind(lo + T.Select(rotates, half, rest))

    def cos_sin(self, rope: RopeParams, position, i):
        """The pair's cos and sin; 1 and 0 for pass-through features."""
        cos, sin, lets = rope_freq_func(rope.scaling)(
            position.astype("float32"), i, self.rotary, rope.theta, "float32"
        )
        for var, value in lets.items():
            cos, sin = tirx.Let(var, value, cos), tirx.Let(var, value, sin)
        if self.rotary < self.d:
            rotates = i < self.rotary // 2
            one, zero = tirx.const(1.0, "float32"), tirx.const(0.0, "float32")
            cos, sin = T.Select(rotates, cos, one), T.Select(rotates, sin, zero)
        return T.bind(cos), T.bind(sin)


def rope_append_gpu(
    h_q: int,
    h_kv: int,
    d: int,
    page_size: int,
    dtype: str,
    rope: RopeParams,
    norm_eps: float | None = None,
    cache_dtype: str = "",
) -> tirx.PrimFunc:
    """(qkv [t, (h_q + 2 h_kv) d], positions [t], pages (in place), slots [t]
    [, q_norm [d], k_norm [d] when norm_eps is given]) -> q [t, h_q, d]; the pages hold
    `cache_dtype` ("": `dtype`). RoPE over the first rope.rotary_dim features of each head."""
    check_rotary(rope.rotary_dim, d)
    pairs = _Pairs(d, rope.rotary_dim)
    rows = GpuRows(h_kv, d, page_size, cache_dtype or dtype)
    half, heads = d // 2, h_q + 2 * h_kv
    groups = max(1, THREADS // half)
    with IRBuilder() as ib, T.prim_func():
        T.func_name("rope_append_gpu")
        T.func_attr(KERNEL_ATTRS)
        params = _params(h_q, h_kv, d, rows, dtype, norm_eps is not None)
        tokens, qkv, positions, pages, slots, weights, q_out = params
        t = T.env_thread("blockIdx.x")
        tx = T.env_thread("threadIdx.x")
        with T.launch_thread(t, tokens), T.launch_thread(tx, groups * half):
            norm = _head_norm(weights, norm_eps, groups * half)
            staged = _Staged.alloc(groups, d) if rows.packed else None
            i, group = tx % half, tx // half
            lo, hi = pairs.features(i)
            cos, sin = pairs.cos_sin(rope, positions[t], i)
            slot = T.bind(slots[t])
            with T.serial(0, (heads + groups - 1) // groups) as step:
                h = step * groups + group
                base = T.bind(
                    T.min(h, heads - 1) * d
                )  # the last step's extra threads read in range
                raw = (
                    T.bind(qkv[t, base + lo].astype("float32")),
                    T.bind(qkv[t, base + hi].astype("float32")),
                )
                a, b = raw
                if norm is not None:  # v heads are stored from `raw`, unnormalized
                    a, b = norm.apply(a, b, h, h_q, (i, lo, hi), group, half)
                low, high = T.bind(a * cos - b * sin), T.bind(b * cos + a * sin)
                with T.If(h < h_q), T.Then():
                    T.buffer_store(q_out, low.astype(dtype), [t, h, lo])
                    T.buffer_store(q_out, high.astype(dtype), [t, h, hi])
                where = (slot // page_size, slot % page_size)
                if staged is None:
                    _store_pairs(rows, pages, (h, h_q), (lo, hi), where, slot, (low, high), raw)
                else:
                    is_key = h < h_q + h_kv  # k rotated; v (and q, not stored) as read
                    pair = (T.Select(is_key, low, raw[0]), T.Select(is_key, high, raw[1]))
                    staged.store(
                        rows, pages, (h, h_q, heads), (i, lo, hi), group, pair, where, slot
                    )
    return ib.get()


def _store_pairs(rows: GpuRows, pages, heads, features, where, slot, key, value) -> None:
    """Float pages: head h's two features (`features`, as _Pairs gives them), `key` if it is a
    k head, `value` (as qkv holds it) if a v head; `heads` is (h, h_q)."""
    (h, h_q), h_kv = heads, rows.h_kv
    page, offset = where
    for kv, pair, first in ((0, key, h_q), (1, value, h_q + h_kv)):
        with T.If(tirx.all(h >= first, h < first + h_kv, slot >= 0)), T.Then():
            rows.store(pages, page, kv, h - first, offset, features[0], [pair[0]])
            rows.store(pages, page, kv, h - first, offset, features[1], [pair[1]])


@dataclass(frozen=True)
class _Staged:
    """Shared memory for int8 rows: each head group's d values and its pairs' magnitudes."""

    values: tirx.Buffer  # [groups * d]
    amax: tirx.Buffer  # [groups * d / 2]

    @staticmethod
    def alloc(groups: int, d: int) -> _Staged:
        values = T.alloc_buffer((groups * d,), "float32", scope="shared")
        return _Staged(values, T.alloc_buffer((groups * d // 2,), "float32", scope="shared"))

    def store(self, rows: GpuRows, pages, heads, thread, group, pair, where, slot) -> None:
        """Every thread of the workgroup calls it (two barriers); `heads` is (h, h_q, all),
        `thread` (index, the features of `pair`) as _Pairs gives them."""
        h, h_q, total = heads
        i, lo, hi = thread
        d = rows.d
        half = d // 2
        T.buffer_store(self.values, pair[0], [group * d + lo])
        T.buffer_store(self.values, pair[1], [group * d + hi])
        T.buffer_store(self.amax, magnitude(list(pair)), [group * half + i])
        T.evaluate(T.tvm_storage_sync("shared"))
        top = row_max(self.amax, group * half, half)
        words = [self.values[group * d + PACK * i + b] for b in range(PACK)]
        h_kv = rows.h_kv
        kv = T.bind(T.Select(h < h_q + h_kv, 0, 1))
        head = h - h_q - kv * h_kv
        with T.If(tirx.all(i < rows.words, h >= h_q, h < total, slot >= 0)), T.Then():
            rows.store(pages, where[0], kv, head, where[1], i, words, top)
        T.evaluate(T.tvm_storage_sync("shared"))  # the next step overwrites the staging
