"""Decode (GEMV) for 4-bit formats: two chunks at a time as 16-bit words, eight per reduction.

A 32-byte load holds two chunks as 16 uint16 words; nibble k of every word comes out with a
shift and a mask (no widening shuffles) and meets the activations with `vpmaddwd`. Lane w of
extraction k holds feature 4 * (w % 8) + k of chunk w // 8, so the activations are permuted
once per token into PAIR_ORDER.

Four pairs (eight chunks, 256 weights) are then reduced together: two rounds of pairwise
horizontal adds leave one int32 per chunk, in SCALE_ORDER, so one convert and one FMA with
eight combined scales (stored in that order by `row_scales`) finish them. Per pair instead,
the convert, the scale broadcast and a serial FMA chain made the loop compute bound.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.gemv_common import (
    GEMV_LANES,
    prefetch_row_planes,
    prefetch_steps,
    row_scales,
    vector_groups,
)
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_spec import LinearSpec, divisor, split_range, store_out
from mlcx.kernels.cpu.rows import QuantizedRows, quantize_row
from mlcx.kernels.cpu.weights import CHUNK, NATURAL, QuantReader

PAIR_ORDER = [(w // 8) * CHUNK + 4 * (w % 8) + k for k in range(4) for w in range(16)]
# hadd(a, b) within each 128-bit half: a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, a6+a7, b4+b5, b6+b7
HADD_EVEN = [0, 2, 8, 10, 4, 6, 12, 14]
HADD_ODD = [1, 3, 9, 11, 5, 7, 13, 15]
# The chunk (of eight) whose dot product lane j holds after two rounds of hadd.
SCALE_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
GROUP_PAIRS = GEMV_LANES // 2  # pairs of chunks in one vector group of eight chunks
LINE_WORDS = 32  # uint16 words per 64-byte cache line


def _permute_pairs(q: QuantizedRows, xp, t, k: int) -> None:
    """xp[t] = q.codes[t] in PAIR_ORDER, two chunks at a time."""
    with T.serial(0, k // (2 * CHUNK)) as p:
        first = q.codes[t, vec.ramp(p * 2 * CHUNK, CHUNK)]
        second = q.codes[t, vec.ramp(p * 2 * CHUNK + CHUNK, CHUNK)]
        T.buffer_store(xp, T.Shuffle([first, second], PAIR_ORDER), [t, vec.ramp(p * 64, 64)])


def _unpack(words, row, p) -> list:
    """The four nibble planes of pair p of `row`, int16 x 16 each, bound once."""
    packed = T.bind(words[row, vec.ramp(p * 16, 16)])
    planes = []
    for k in range(4):
        nibble = (packed >> vec.splat(tirx.const(4 * k, "uint16"), 16)) & vec.splat(
            tirx.const(15, "uint16"), 16
        )
        planes.append(T.bind(T.Cast("int16x16", nibble)))
    return planes


def _dot(planes, xp, t, p) -> tirx.PrimExpr:
    """int32 x 8: lanes 0-3 sum to chunk 2p's dot product, lanes 4-7 to chunk 2p + 1's."""
    dot = None
    for k, plane in enumerate(planes):
        term = vec.madd_i16(plane, xp[t, vec.ramp(p * 64 + k * 16, 16)], 16)
        dot = term if dot is None else dot + term
    return T.bind(dot)


def _pair_dot(words, row, xp, t, p) -> tirx.PrimExpr:
    return _dot(_unpack(words, row, p), xp, t, p)


def _hadd(a, b):
    return T.Shuffle([a, b], HADD_EVEN) + T.Shuffle([a, b], HADD_ODD)


def _group_step(words, xp, t, acc, scales, row, r, gq) -> None:
    """acc[r] += the dot products of pairs 4gq .. 4gq + 3, scaled (lanes in SCALE_ORDER)."""
    dots = [_pair_dot(words, row, xp, t, gq * GROUP_PAIRS + i) for i in range(GROUP_PAIRS)]
    sums = _hadd(T.bind(_hadd(dots[0], dots[1])), T.bind(_hadd(dots[2], dots[3])))
    scaled = T.Cast("float32x8", sums) * scales[r, vec.ramp(gq * 8, 8)]
    lanes = vec.ramp(0, GEMV_LANES)
    T.buffer_store(acc, acc[r, lanes] + scaled, [r, lanes])


def _group_step_tokens(words, xp, count: int, acc, scales, row, r, rows, gq) -> None:
    """`_group_step` for tokens 0..count-1 (a static count) with the weights unpacked once:
    a step verifying drafted tokens runs a few tokens, and unpacking costs about as much as
    the dot products."""
    planes = [_unpack(words, row, gq * GROUP_PAIRS + i) for i in range(GROUP_PAIRS)]
    lanes = vec.ramp(0, GEMV_LANES)
    for t in range(count):
        dots = [_dot(planes[i], xp, t, gq * GROUP_PAIRS + i) for i in range(GROUP_PAIRS)]
        sums = _hadd(T.bind(_hadd(dots[0], dots[1])), T.bind(_hadd(dots[2], dots[3])))
        slot = t * rows + r
        scaled = T.Cast("float32x8", sums) * scales[slot, vec.ramp(gq * 8, 8)]
        T.buffer_store(acc, acc[slot, lanes] + scaled, [slot, lanes])


def _pair_step(words, xp, t, acc, scales, row, r, p) -> None:
    """acc[r] += the dot products of pair p, scaled (scales in natural order)."""
    two = scales[r, vec.ramp(p * 2, 2)]
    scaled = T.Cast("float32x8", _pair_dot(words, row, xp, t, p)) * T.Shuffle(
        [two] * 4, [0] * 4 + [1] * 4
    )
    lanes = vec.ramp(0, GEMV_LANES)
    T.buffer_store(acc, acc[r, lanes] + scaled, [r, lanes])


def gemv_pairs(spec: LinearSpec, cfg: KernelConfig, reader: QuantReader, bufs, tokens) -> None:
    """Decode for 4-bit formats with an even number of chunks."""
    k, n = spec.in_features, spec.out_features
    chunks, rows = k // CHUNK, divisor(n, cfg.gemv_rows)
    # Eight-chunk reductions read the scales that row_scales stores as vectors, permuted.
    groups = vector_groups(reader, chunks)
    words = T.decl_buffer((n, k // 4), "uint16", data=bufs["qweight"].data)
    with T.parallel(0, cfg.threads) as c:
        q = QuantizedRows.alloc(tokens, k)
        xp = T.alloc_buffer((tokens, k), "int16")
        with T.serial(0, tokens) as t:
            quantize_row(spec.source, bufs, t, q, t, NATURAL)
            _permute_pairs(q, xp, t, k)
        begin, end = split_range(n // rows, cfg.threads, c)
        ahead = prefetch_steps(cfg, rows, k // 2)
        walk = (spec, reader, bufs, words, q, xp, rows, chunks, groups, ahead, begin, end)
        _by_count(walk, tokens, list(range(2, cfg.gemv_max_tokens + 1)))


def _by_count(walk, tokens, counts: list[int]) -> None:
    """A static walk for each token count in `counts`, the per-token walk otherwise."""
    if not counts:
        _walk_per_token(*walk, tokens)
        return
    with T.If(tokens == counts[0]):
        with T.Then():
            _walk_static(*walk, counts[0])
        with T.Else():
            _by_count(walk, tokens, counts[1:])


def _walk_per_token(
    spec, reader, bufs, words, q, xp, rows, chunks, groups, ahead, begin, end, tokens
) -> None:
    """One token at a time, each walking the thread's rows (decode)."""
    lanes = GEMV_LANES
    acc = T.alloc_buffer((rows, lanes), "float32")
    scales = T.alloc_buffer((rows, chunks), "float32")
    offsets = T.alloc_buffer((rows, lanes), "float32")
    with T.serial(begin, end) as step, T.serial(0, tokens) as t:
        for r in range(rows):
            row = step * rows + r
            row_scales(reader, bufs, q, row, t, scales, offsets, r, SCALE_ORDER)
            T.buffer_store(acc, vec.splat(vec.f32(0.0), lanes), [r, vec.ramp(0, lanes)])
            if ahead:
                prefetch_row_planes(bufs, row + ahead * rows)
        with T.serial(0, groups) as gq:
            for r in range(rows):
                row = step * rows + r
                if ahead:
                    for line in range(GROUP_PAIRS * 16 // LINE_WORDS):
                        vec.prefetch(words, [row + ahead * rows, gq * 64 + line * LINE_WORDS])
                _group_step(words, xp, t, acc, scales, row, r, gq)
        with T.serial(groups * GROUP_PAIRS, chunks // 2) as p:
            for r in range(rows):
                row = step * rows + r
                if ahead:
                    vec.prefetch(words, [row + ahead * rows, p * 16])
                _pair_step(words, xp, t, acc, scales, row, r, p)
        for r in range(rows):
            total = acc[r, vec.ramp(0, lanes)] + offsets[r, vec.ramp(0, lanes)]
            store_out(spec, bufs, t, step * rows + r, vec.hsum(total, lanes))


def _walk_static(
    spec, reader, bufs, words, q, xp, rows, chunks, groups, ahead, begin, end, count: int
) -> None:
    """`count` tokens together: each weight group is unpacked once for all of them."""
    lanes = GEMV_LANES
    acc = T.alloc_buffer((count * rows, lanes), "float32")
    scales = T.alloc_buffer((count * rows, chunks), "float32")
    offsets = T.alloc_buffer((count * rows, lanes), "float32")
    with T.serial(begin, end) as step:
        for t in range(count):
            for r in range(rows):
                row, slot = step * rows + r, t * rows + r
                row_scales(reader, bufs, q, row, t, scales, offsets, slot, SCALE_ORDER)
                T.buffer_store(acc, vec.splat(vec.f32(0.0), lanes), [slot, vec.ramp(0, lanes)])
        if ahead:
            for r in range(rows):
                prefetch_row_planes(bufs, step * rows + r + ahead * rows)
        with T.serial(0, groups) as gq:
            for r in range(rows):
                row = step * rows + r
                if ahead:
                    for line in range(GROUP_PAIRS * 16 // LINE_WORDS):
                        vec.prefetch(words, [row + ahead * rows, gq * 64 + line * LINE_WORDS])
                _group_step_tokens(words, xp, count, acc, scales, row, r, rows, gq)
        with T.serial(groups * GROUP_PAIRS, chunks // 2) as p:
            for r in range(rows):
                row = step * rows + r
                planes = _unpack(words, row, p)
                two_lanes = [0] * 4 + [1] * 4
                for t in range(count):
                    slot = t * rows + r
                    two = scales[slot, vec.ramp(p * 2, 2)]
                    dot = T.Cast("float32x8", _dot(planes, xp, t, p))
                    scaled = dot * T.Shuffle([two] * 4, two_lanes)
                    T.buffer_store(
                        acc, acc[slot, vec.ramp(0, lanes)] + scaled, [slot, vec.ramp(0, lanes)]
                    )
        for t in range(count):
            for r in range(rows):
                slot = t * rows + r
                total = acc[slot, vec.ramp(0, lanes)] + offsets[slot, vec.ramp(0, lanes)]
                store_out(spec, bufs, t, step * rows + r, vec.hsum(total, lanes))
