"""Int16 weighted value sums for the CPU dense attention kernel (with dense_scores' codes).

The softmax weights exp(s - max) lie in (0, 1]: each becomes a code of WEIGHT_LIMIT steps (14
bits), computed as a power of two of the scores in bits (dense_scores folds log2(e) into them,
and the scores' pass keeps each row's largest: no pass over a row for its max); each value
feature a code of VALUE_LIMIT steps of its column's largest magnitude over the keys of the head
(11 bits and a sign), so a tile of TILE_KEYS keys sums in int32 without overflow. Each tile's
sums are added to float32 ones, and the column scales and the row's total of weight codes are
applied once at the end. Two keys' codes share an int32 word (low half the even key), so a
row's weight pair is one broadcast and the dot products are `vec.madd_i16` sums (`vpdpwssd` on
AVX512-VNNI: twice the multiplies of a float32 FMA).

Layouts (int32 words): values [h, n / 2, d], value scales [h, d];
weights [rows, n / 2] per row block.
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.dense_scores import cover, pair_word

WEIGHT_LIMIT = 16383
VALUE_LIMIT = 2047
TILE_KEYS = 64
assert TILE_KEYS * WEIGHT_LIMIT * VALUE_LIMIT < 2**31  # one tile's int32 sums
# 2**f on [0, 1), least relative squares (2.7e-6)
POW2_POLY = (
    1.352061682e-2,
    5.203751989e-2,
    2.414273438e-1,
    6.930066806e-1,
    1.000002513,
)


def value_tile(tokens: int) -> int:
    """Keys of one int32 tile: the largest even divisor of the (even) token count."""
    return next(t for t in range(min(TILE_KEYS, tokens), 1, -1) if tokens % t == 0 and t % 2 == 0)


def _codes(x, lanes: int):
    return T.Cast(vec.vtype("int32", lanes), T.round(x))


def pack_values(sh, v, head, words, scales) -> None:
    """words[head, s, :] = the value codes of keys 2s and 2s + 1; scales[head, f] = the step
    of feature f (the weight codes' step cancels against their total)."""
    parts = cover(sh.head_dim)
    best = T.alloc_buffer((sh.head_dim,), "float32")
    for start, lanes in parts:
        T.buffer_store(best, vec.splat(vec.f32(1e-30), lanes), [vec.ramp(start, lanes)])
    with T.serial(0, sh.tokens) as s:
        for start, lanes in parts:
            value = T.bind(v[head, s, vec.ramp(start, lanes)])
            top = T.max(best[vec.ramp(start, lanes)], T.max(value, -value))
            T.buffer_store(best, top, [vec.ramp(start, lanes)])
    with T.serial(0, sh.tokens // 2) as s:
        for start, lanes in parts:
            inv = vec.splat(vec.f32(VALUE_LIMIT), lanes) / best[vec.ramp(start, lanes)]
            inv = T.bind(inv)
            even = _codes(v[head, 2 * s, vec.ramp(start, lanes)] * inv, lanes)
            odd = _codes(v[head, 2 * s + 1, vec.ramp(start, lanes)] * inv, lanes)
            word = pair_word(even, odd, lanes)
            T.buffer_store(words, word, [head, s, vec.ramp(start, lanes)])
    step = vec.f32(1.0 / VALUE_LIMIT)
    for start, lanes in parts:
        scale = best[vec.ramp(start, lanes)] * vec.splat(step, lanes)
        T.buffer_store(scales, scale, [head, vec.ramp(start, lanes)])


def value_buffers(sh) -> dict:
    """The codes and scales value_sums reads, allocated in the calling kernel."""
    return {
        "values": T.alloc_buffer((sh.heads, sh.tokens // 2, sh.head_dim), "int32"),
        "value_scales": T.alloc_buffer((sh.heads, sh.head_dim), "float32"),
    }


def pack(sh, bufs, head, packed) -> None:
    pack_values(sh, bufs["v"], head, packed["values"], packed["value_scales"])


def _pow2(y, lanes: int):
    """2**y for y >= -2 (whose codes round to 0 below): 2**floor(y) into the exponent of a
    degree-4 polynomial for the fraction (2.7e-6 relative, under a thirtieth of a code)."""
    n = T.bind(T.floor(y))
    f = y - n
    p = vec.splat(vec.f32(POW2_POLY[0]), lanes)
    for c in POW2_POLY[1:]:
        p = p * f + vec.splat(vec.f32(c), lanes)
    shift = T.Cast(vec.vtype("int32", lanes), n) << vec.splat(tirx.const(23, "int32"), lanes)
    bits = T.reinterpret(vec.vtype("int32", lanes), p) + shift
    return T.reinterpret(vec.vtype("float32", lanes), bits)


def weight_codes(sh, scores, words, r, best):
    """Row r's weights 2**(score - top) (scores in bits, top the largest of best[r]) as pair
    words of codes; the sum of its codes (below 2**31 up to 131072 keys)."""
    lanes = sh.lanes
    half = lanes // 2
    every = vec.ramp(0, lanes)
    total = T.alloc_buffer((lanes,), "int32")
    T.buffer_store(total, vec.splat(tirx.const(0, "int32"), lanes), [every])
    # the largest weight is WEIGHT_LIMIT: 2**(score - top + log2 WEIGHT_LIMIT)
    shift = T.bind(vec.hmax(best[r, every], lanes) - vec.f32(math.log2(WEIGHT_LIMIT)))
    with T.serial(0, sh.tokens // lanes) as j:
        bits = scores[r, vec.ramp(j * lanes, lanes)] - vec.splat(shift, lanes)
        weight = _pow2(T.max(bits, vec.splat(vec.f32(-2.0), lanes)), lanes)
        codes = T.bind(T.Cast(vec.vtype("int32", lanes), weight + vec.splat(vec.f32(0.5), lanes)))
        T.buffer_store(total, total[every] + codes, [every])
        even = T.Shuffle([codes], list(range(0, lanes, 2)))
        odd = T.Shuffle([codes], list(range(1, lanes, 2)))
        T.buffer_store(words, pair_word(even, odd, half), [r, vec.ramp(j * half, half)])
    return T.bind(vec.to_f32(vec.hsum(total[every], lanes)))


def value_sums(sh, packed, head, tile, sums, words, chunk, block_rows: int) -> None:
    """sums[row, chunk's features] += the int32 sums of tile's keys for every row of the
    block, `rows` rows of the chunk's vectors at a time in registers."""
    keys, width = value_tile(sh.tokens), len(chunk)
    rows = next(r for r in range(block_rows, 0, -1) if block_rows % r == 0 and r * width <= 24)
    acc = T.alloc_buffer((rows * width, 16), "int32")

    def slot(r: int, i: int):
        return [r * width + i, vec.ramp(0, chunk[i][1])]

    with T.serial(0, block_rows // rows) as group:
        for r in range(rows):
            for i, (_, lanes) in enumerate(chunk):
                T.buffer_store(acc, vec.splat(tirx.const(0, "int32"), lanes), slot(r, i))
        with T.serial(tile * keys // 2, (tile + 1) * keys // 2) as s:
            values = [
                T.bind(
                    T.reinterpret(
                        f"int16x{2 * lanes}",
                        packed["values"][head, s, vec.ramp(start, lanes)],
                    )
                )
                for start, lanes in chunk
            ]
            for r in range(rows):
                word = T.bind(words[group * rows + r, s])
                for i, (_, lanes) in enumerate(chunk):
                    pair = T.reinterpret(f"int16x{2 * lanes}", vec.splat(word, lanes))
                    update = acc[slot(r, i)] + vec.madd_i16(pair, values[i], 2 * lanes)
                    T.buffer_store(acc, update, slot(r, i))
        for r in range(rows):
            for i, (start, lanes) in enumerate(chunk):
                index = [group * rows + r, vec.ramp(start, lanes)]
                T.buffer_store(sums, sums[index] + vec.to_f32(acc[slot(r, i)]), index)
