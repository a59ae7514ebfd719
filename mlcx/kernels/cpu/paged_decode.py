"""Decode attention for CPU: a few query rows per sequence, keys shared by their GQA group.

Decode attention reads every cached key and value once per query head and does one FMA per
element read, so it is bound by memory bandwidth. Here the query heads of a KV head's group
are processed together, so each key and value is read once per group, and each sequence's pages
are split over `splits` work items (flash-decoding), so a single sequence fills all cores.

A variant takes up to `rows` query rows per sequence (speculative decoding's verify step: the
draft and one more): each (row, group head) pair is a lane of the same page loop, so a page is
read once for all of them too; row r of n sees keys up to kv_len - n + r.

Phase 1, per (sequence, kv head, split): online softmax over the split's pages for every (row,
group head) pair; writes (max, sum, unnormalized output) per pair. Phase 2, per (query row,
query head): merges the splits, and adds the head's sink logit (gpt-oss's attention sinks) to
the softmax denominator there, once. Keys are stored transposed in pages
(mlcx.kernels.cpu.kv_pages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kv_pages import PageGeometry

NEG_INF = -3.0e38  # a masked score
# A pair's running max before any key: above NEG_INF, so that a page whose keys are all masked
# for a pair (a verify row's last pages) weighs exp(NEG_INF - EMPTY) = 0, not exp(0).
EMPTY = -1.0e38


@dataclass(frozen=True)
class DecodeShape:
    h_q: int
    geo: PageGeometry
    window: int = 0  # keys the query sees (sliding window); 0: all
    softcap: float = 0.0  # scores become softcap * tanh(score / softcap); 0: none
    rows: int = 1  # query rows per sequence at most (> 1: verify steps, no window)
    sinks: bool = False  # a sink logit per query head joins each softmax's denominator

    def __post_init__(self) -> None:
        if self.rows > 1 and self.window:
            raise ValueError("multi-row decode attention has no sliding window")

    @property
    def group(self) -> int:
        return self.h_q // self.geo.h_kv

    @property
    def pairs(self) -> int:
        """(row, group head) pairs of a work item, row-major."""
        return self.rows * self.group

    @property
    def splits(self) -> int:
        """Page splits per (sequence, kv head): enough items for a few cores at batch 1."""
        return max(1, 8 // self.geo.h_kv)

    @property
    def part(self) -> int:
        """Output features accumulated at once: pairs * part / 16 registers, at most ~16."""
        d, most = self.geo.head_dim, max(8, 256 // self.pairs)
        return next(w for w in (32, 16, 8, d) if d % w == 0 and (w <= most or w == d))


def _page_scores(sh: DecodeShape, bufs, tokens, kv_head, page, following, scores) -> None:
    """scores[r * group + h, s] = q[tokens[r], head h of the group] . key(page, s) * sm_scale.

    Also prefetches the `following` page's key and value slabs: each slab starts a new 4 KiB
    memory page, where hardware prefetchers would start cold."""
    geo, ps, g, pairs = sh.geo, sh.geo.page_size, sh.group, sh.pairs
    # 8 independent FMA chains (two FMA units, four cycles each) over the pairs
    chains = math.gcd(max(1, 8 // pairs), geo.head_dim)
    acc = T.alloc_buffer((pairs * chains, ps), "float32")
    base = T.bind(geo.key_base(page, kv_head))
    next_key = T.bind(geo.key_base(following, kv_head))
    next_value = T.bind(geo.value_base(following, kv_head))
    line = max(1, 64 // (ps * tvm.DataType(geo.dtype).bits // 8))  # features per 64-byte line
    for a in range(pairs * chains):
        T.buffer_store(acc, vec.splat(vec.f32(0.0), ps), [a, vec.ramp(0, ps)])
    with T.serial(0, geo.head_dim // chains) as cc:
        for part in range(chains):
            c = cc * chains + part
            if part % line == 0 or line > chains:
                vec.prefetch(bufs["flat"], [next_key + c * ps])
                vec.prefetch(bufs["flat"], [next_value + c * ps])
            keys = T.bind(vec.to_f32(bufs["flat"][vec.ramp(base + c * ps, ps)]))
            for a in range(pairs):
                query = T.Cast("float32", bufs["q"][tokens[a // g], kv_head * g + a % g, c])
                update = acc[a * chains + part, vec.ramp(0, ps)] + vec.splat(query, ps) * keys
                T.buffer_store(acc, update, [a * chains + part, vec.ramp(0, ps)])
    scale = vec.splat(vec.f32(1.0 / math.sqrt(geo.head_dim)), ps)
    if geo.quantized:  # each key row's dot product times that row's scale
        scale = T.bind(scale * bufs["scales"][vec.ramp(geo.key_scales(page, kv_head), ps)])
    for a in range(pairs):
        total = acc[a * chains, vec.ramp(0, ps)]
        for part in range(1, chains):
            total = total + acc[a * chains + part, vec.ramp(0, ps)]
        score = total * scale
        if sh.softcap:
            score = vec.softcap(score, sh.softcap, ps)
        T.buffer_store(scores, score, [a, vec.ramp(0, ps)])


def _page_update(sh: DecodeShape, bufs, kv_head, page, valid, scores, state, out) -> None:
    """Fold one page (first `valid` slots) into the running max/sum/output of each pair."""
    geo, ps, pairs, lanes = sh.geo, sh.geo.page_size, sh.pairs, sh.part
    corr = T.alloc_buffer((pairs,), "float32")
    value_scales = None
    if geo.quantized:  # each value row's scale goes into its weights (the sum takes none)
        value_scales = T.bind(bufs["scales"][vec.ramp(geo.value_scales(page, kv_head), ps)])
    # Masked slots hold NEG_INF (set by _split_item); a vector Select here would
    # make LLVM take seconds to compile this function.
    with T.serial(0, pairs) as a:
        row = T.bind(scores[a, vec.ramp(0, ps)])
        top = T.bind(T.max(state[a, 0], vec.hmax(row, ps)))
        weights = T.bind(vec.exp(row - vec.splat(top, ps), ps))
        scaled = weights if value_scales is None else weights * value_scales
        T.buffer_store(scores, scaled, [a, vec.ramp(0, ps)])
        T.buffer_store(corr, vec.exp(state[a, 0] - top, 1), [a])
        T.buffer_store(state, state[a, 1] * corr[a] + vec.hsum(weights, ps), [a, 1])
        T.buffer_store(state, top, [a, 0])
    base = T.bind(geo.value_base(page, kv_head))
    acc = T.alloc_buffer((pairs, lanes), "float32")
    with T.serial(0, geo.head_dim // lanes) as part:
        for a in range(pairs):
            start = vec.ramp(part * lanes, lanes)
            T.buffer_store(acc, out[a, start] * vec.splat(corr[a], lanes), [a, vec.ramp(0, lanes)])
        with T.serial(0, valid) as s:
            value = T.bind(
                vec.to_f32(bufs["flat"][vec.ramp(base + s * geo.head_dim + part * lanes, lanes)])
            )
            for a in range(pairs):
                update = acc[a, vec.ramp(0, lanes)] + vec.splat(scores[a, s], lanes) * value
                T.buffer_store(acc, update, [a, vec.ramp(0, lanes)])
        for a in range(pairs):
            T.buffer_store(out, acc[a, vec.ramp(0, lanes)], [a, vec.ramp(part * lanes, lanes)])


def _mask(sh: DecodeShape, scores, p, bounds) -> None:
    """NEG_INF for the slots of page p each pair must not see: past the keys written (or, for
    a verify row, past its own position), before the window."""
    ps, pairs = sh.geo.page_size, sh.pairs
    valid, low, limits = bounds
    with T.serial(valid, ps) as s, T.serial(0, pairs) as a:
        T.buffer_store(scores, vec.f32(NEG_INF), [a, s])
    if sh.window:  # slots of the first page before the window
        with T.serial(0, T.max(T.min(low - p * ps, ps), 0)) as s, T.serial(0, pairs) as a:
            T.buffer_store(scores, vec.f32(NEG_INF), [a, s])
    if sh.rows > 1:  # row r sees keys below limits[r]; only the last pages hold later ones
        # (a slot test, not a loop from limit - p * ps: loops with those bounds came out wrong
        # once the page loop did not start at 0, i.e. in every split but the first)
        with T.If(p * ps + ps > limits[0]), T.Then(), T.serial(0, ps) as s:
            for a in range(pairs):
                with T.If(p * ps + s >= limits[a // sh.group]), T.Then():
                    T.buffer_store(scores, vec.f32(NEG_INF), [a, s])


def _split_item(sh: DecodeShape, bufs, partials, seq, kv_head, split) -> None:
    """Partial attention of one (sequence, kv head) over the split's share of its pages."""
    ps, g, d, pairs = sh.geo.page_size, sh.group, sh.geo.head_dim, sh.pairs
    first = bufs["page_indptr"][seq]
    num_pages = T.bind(bufs["page_indptr"][seq + 1] - first)
    kv_len = T.bind((num_pages - 1) * ps + bufs["last_page_len"][seq])
    start, n = bufs["q_indptr"][seq], bufs["q_indptr"][seq + 1] - bufs["q_indptr"][seq]
    # rows past the sequence's n repeat its last row (computed, not stored)
    last = [T.min(r, n - 1) for r in range(sh.rows)]
    tokens = [T.bind(start + r) for r in last] if sh.rows > 1 else [seq]
    limits = [T.bind(kv_len - n + r + 1) for r in last] if sh.rows > 1 else []
    low, first_page = 0, 0  # the first key in the window, and its page
    if sh.window:  # pages before the window are never read (the KV manager may release them)
        low = T.bind(T.max(kv_len - sh.window, 0))
        first_page = T.bind(low // ps)
    per = T.bind((num_pages - first_page + sh.splits - 1) // sh.splits)
    begin = T.bind(T.min(first_page + split * per, num_pages))
    end = T.bind(T.min(begin + per, num_pages))
    scores = T.alloc_buffer((pairs, ps), "float32")
    state = T.alloc_buffer((pairs, 2), "float32")  # running max, running sum
    out = T.alloc_buffer((pairs, d), "float32")
    for a in range(pairs):
        T.buffer_store(state, vec.f32(EMPTY), [a, 0])
        T.buffer_store(state, vec.f32(0.0), [a, 1])
        T.buffer_store(out, vec.splat(vec.f32(0.0), d), [a, vec.ramp(0, d)])
    with T.serial(begin, end) as p:
        page = T.bind(bufs["page_values"][first + p])
        following = bufs["page_values"][first + T.min(p + 1, end - 1)]
        valid = T.bind(T.Select(p == num_pages - 1, bufs["last_page_len"][seq], ps))
        _page_scores(sh, bufs, tokens, kv_head, page, following, scores)
        _mask(sh, scores, p, (valid, low, limits))
        _page_update(sh, bufs, kv_head, page, valid, scores, state, out)
    for a in range(pairs):
        if sh.rows == 1:
            _store_partial(partials, (tokens[0], kv_head * g + a, split), state, out, a, d)
        else:
            with T.If(a // g < n), T.Then():
                where = (tokens[a // g], kv_head * g + a % g, split)
                _store_partial(partials, where, state, out, a, d)


def _store_partial(partials, where, state, out, a, d) -> None:
    T.buffer_store(partials, state[a, 0], [*where, 0])
    T.buffer_store(partials, state[a, 1], [*where, 1])
    T.buffer_store(partials, out[a, vec.ramp(0, d)], [*where, vec.ramp(2, d)])


def _merge(sh: DecodeShape, bufs, partials, seq, head) -> None:
    """output[row, head] = splits combined by their softmax statistics (`seq`: the row)."""
    d = sh.geo.head_dim
    top = partials[seq, head, 0, 0]
    for s in range(1, sh.splits):
        top = T.max(top, partials[seq, head, s, 0])
    sink = T.bind(T.Cast("float32", bufs["sinks"][head])) if sh.sinks else None
    top = T.bind(top if sink is None else T.max(top, sink))
    # the sink is one more term of the denominator, weighing no value
    total = vec.f32(0.0) if sink is None else T.exp(sink - top)
    acc = vec.splat(vec.f32(0.0), d)
    for s in range(sh.splits):
        weight = T.bind(T.exp(partials[seq, head, s, 0] - top))
        total = total + weight * partials[seq, head, s, 1]
        acc = acc + vec.splat(weight, d) * partials[seq, head, s, vec.ramp(2, d)]
    result = acc * vec.splat(vec.f32(1.0) / total, d)
    T.buffer_store(
        bufs["output"], T.Cast(vec.vtype(sh.geo.io_dtype, d), result), [seq, head, vec.ramp(0, d)]
    )


def decode_attention(sh: DecodeShape, bufs) -> None:
    """Emit both phases (inside a prim_func whose every sequence has at most sh.rows query
    rows, one with sh.rows == 1)."""
    batch, h_kv, splits = bufs["batch"], sh.geo.h_kv, sh.splits
    partials = T.alloc_buffer((bufs["tokens"], sh.h_q, splits, sh.geo.head_dim + 2), "float32")
    with T.parallel(0, batch * h_kv * splits) as item:
        seq = item // (h_kv * splits)
        _split_item(sh, bufs, partials, seq, item // splits % h_kv, item % splits)
    with T.parallel(0, bufs["tokens"] * sh.h_q) as item:
        _merge(sh, bufs, partials, item // sh.h_q, item % sh.h_q)


def uses_decode(tokens: tirx.PrimExpr, batch: tirx.PrimExpr) -> tirx.PrimExpr:
    """Every sequence brings exactly one query token."""
    return tokens == batch


def verify_rows(group: int) -> int:
    """Query rows per sequence the multi-row variant takes: (row, head) pairs fill at most 16
    accumulators; 1 (no variant) for groups of 8 heads and more."""
    return min(8, 16 // group) if group < 8 else 1


def fewest_rows_over(bufs, rows: int) -> tirx.PrimExpr:
    """True when no sequence of the step brings more than `rows` query rows."""
    longest = T.alloc_buffer((1,), "int32")
    T.buffer_store(longest, 0, [0])
    with T.serial(0, bufs["batch"]) as seq:
        n = bufs["q_indptr"][seq + 1] - bufs["q_indptr"][seq]
        T.buffer_store(longest, T.max(longest[0], n), [0])
    return longest[0] <= rows
