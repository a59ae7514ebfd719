"""Int16 attention scores for the CPU dense attention kernel (mlcx.kernels.cpu.dense_attention).

Each query row and each key is scaled by its own largest magnitude onto int16 codes of at most
`code_limit(d)`, the largest bound whose d products cannot overflow an int32 sum (5461 at
d = 72: 13.4 bits, finer than the float16 that llama.cpp's encoder multiplies). Pairs of
adjacent features are packed into one int32, so a row's pair is one broadcast and a key tile's
pair one load, and the dot products are `vec.madd_i16` sums: `vpdpwssd` on AVX512-VNNI
(32 multiplies an instruction against 16 for a float32 FMA), `vpmaddwd` on AVX2.

Layouts (int32 words, low half the even feature, an odd head_dim padded with a zero):
  queries [h, n, pairs]                  query scales [h, n] (times the attention scale)
  keys    [h, n / lanes, pairs, lanes]   key scales [h, n]
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec

INT32_MAX = 2**31 - 1


def code_limit(head_dim: int) -> int:
    """The largest |code|: head_dim products of two codes sum within int32."""
    return min(32767, math.isqrt(INT32_MAX // head_dim))


def pairs(head_dim: int) -> int:
    return (head_dim + 1) // 2


def cover(count: int) -> list[tuple[int, int]]:
    """(start, lanes) runs covering `count` items: 16 lanes, then the rest by powers of two."""
    parts, start = [], 0
    for lanes in (16, 8, 4, 2, 1):
        while count - start >= lanes:
            parts.append((start, lanes))
            start += lanes
    return parts


def _codes(x, inv, lanes: int):
    """round(x * inv) as int32 lanes."""
    return T.Cast(vec.vtype("int32", lanes), T.round(x * vec.splat(inv, lanes)))


def pair_word(even, odd, lanes: int):
    """Two int32 code vectors as int16 pairs in int32 words: low half even, high half odd."""
    mask = vec.splat(tirx.const(0xFFFF, "int32"), lanes)
    return (even & mask) | (odd << vec.splat(tirx.const(16, "int32"), lanes))


def _every_other(q, head, t, first, lanes: int):
    """q[head, t, first], q[head, t, first + 2], ... (lanes of them)."""
    return q[head, t, T.Ramp(first, 2, lanes) if lanes > 1 else first]


def _magnitude_max(q, head, t, head_dim: int):
    top = None
    for start, lanes in cover(head_dim):
        value = T.bind(q[head, t, vec.ramp(start, lanes)])
        best = T.bind(vec.hmax(T.max(value, -value), lanes))
        top = best if top is None else T.max(top, best)
    return T.max(top, vec.f32(1e-30))


def pack_rows(sh, x, head, codes, scales, factor: float) -> None:
    """codes[head, t, :] = row t's int16 pairs; scales[head, t] = its step times factor."""
    d, limit = sh.head_dim, code_limit(sh.head_dim)
    with T.serial(0, sh.tokens) as t:
        top = T.bind(_magnitude_max(x, head, t, d))
        inv = T.bind(vec.f32(limit) / top)
        for start, lanes in cover(d // 2):
            even = _codes(_every_other(x, head, t, 2 * start, lanes), inv, lanes)
            odd = _codes(_every_other(x, head, t, 2 * start + 1, lanes), inv, lanes)
            T.buffer_store(codes, pair_word(even, odd, lanes), [head, t, vec.ramp(start, lanes)])
        if d % 2:
            last = _codes(x[head, t, d - 1], inv, 1)
            T.buffer_store(codes, pair_word(last, tirx.const(0, "int32"), 1), [head, t, d // 2])
        T.buffer_store(scales, top * vec.f32(factor / limit), [head, t])


def pack_keys(sh, rows, head, codes) -> None:
    """codes[head, j, p, :] = the pairs p of the keys of tile j, from their rows' pairs
    (rows: [h, n, pairs] flat)."""
    lanes, count = sh.lanes, pairs(sh.head_dim)
    with T.serial(0, sh.tokens // lanes) as j, T.serial(0, count) as p:
        first = (head * sh.tokens + j * lanes) * count + p
        keys = rows[T.Ramp(first, count, lanes)]
        T.buffer_store(codes, keys, [head, j, p, vec.ramp(0, lanes)])


def int16_scores(sh, packed, head, row0, scores, best, rows: int, groups: int) -> None:
    """scores[g * rows + r, key] for the block's rows from the packed codes, in bits (scores
    of the float path times log2(e)): rows x key_vectors int32 sums in registers over the
    feature pairs; best[g * rows + r, :] = the largest score of each lane."""
    n, lanes, kv = sh.tokens, sh.lanes, sh.key_vectors
    halves = f"int16x{2 * lanes}"
    acc = T.alloc_buffer((rows * kv, lanes), "int32")
    every = vec.ramp(0, lanes)
    for a in range(rows * groups):
        T.buffer_store(best, vec.splat(vec.f32(-3.0e38), lanes), [a, every])
    with T.serial(0, n // (lanes * kv)) as j, T.serial(0, groups) as group:
        for a in range(rows * kv):
            T.buffer_store(acc, vec.splat(tirx.const(0, "int32"), lanes), [a, every])
        with T.serial(0, pairs(sh.head_dim)) as p:
            keys = [
                T.bind(T.reinterpret(halves, packed["keys"][head, j * kv + v, p, every]))
                for v in range(kv)
            ]
            for r in range(rows):
                row = T.min(row0 + group * rows + r, n - 1)
                word = vec.splat(packed["queries"][head, row, p], lanes)
                query = T.bind(T.reinterpret(halves, word))
                for v in range(kv):
                    update = acc[r * kv + v, every] + vec.madd_i16(query, keys[v], 2 * lanes)
                    T.buffer_store(acc, update, [r * kv + v, every])
        for r in range(rows):
            row = T.min(row0 + group * rows + r, n - 1)
            step = vec.splat(packed["query_scales"][head, row], lanes)
            for v in range(kv):
                keys = vec.ramp((j * kv + v) * lanes, lanes)
                sums = T.Cast(vec.vtype("float32", lanes), acc[r * kv + v, every])
                score = T.bind(sums * step * packed["key_scales"][head, keys])
                T.buffer_store(scores, score, [group * rows + r, keys])
                top = T.max(best[group * rows + r, every], score)
                T.buffer_store(best, top, [group * rows + r, every])


def packed_buffers(sh) -> dict:
    """The codes and scales int16_scores reads, allocated in the calling kernel."""
    h, n, p = sh.heads, sh.tokens, pairs(sh.head_dim)
    return {
        "queries": T.alloc_buffer((h, n, p), "int32"),
        "key_rows": T.alloc_buffer((h * n * p,), "int32"),
        "query_scales": T.alloc_buffer((h, n), "float32"),
        "keys": T.alloc_buffer((h, n // sh.lanes, p, sh.lanes), "int32"),
        "key_scales": T.alloc_buffer((h, n), "float32"),
    }


def pack(sh, bufs, head, packed) -> None:
    """Queries in bits (their scales times sh.scale and log2(e): dense_values takes powers of
    two of the scores); keys [h, n, d] as rows, then as tiles of `lanes` keys."""
    pack_rows(sh, bufs["q"], head, packed["queries"], packed["query_scales"], sh.scale * vec.LOG2E)
    rows = T.decl_buffer(
        (sh.heads, sh.tokens, pairs(sh.head_dim)), "int32", data=packed["key_rows"].data
    )
    pack_rows(sh, bufs["k"], head, rows, packed["key_scales"], 1.0)
    pack_keys(sh, packed["key_rows"], head, packed["keys"])
