"""Decode attention for CPU: one query token per sequence, keys shared by their GQA group.

Decode attention reads every cached key and value once per query head and does one FMA per
element read, so it is bound by memory bandwidth. Here the query heads of a KV head's group
are processed together, so each key and value is read once per group, and each sequence's pages
are split over `splits` work items (flash-decoding), so a single sequence fills all cores.

Phase 1, per (sequence, kv head, split): online softmax over the split's pages for all group
heads; writes (max, sum, unnormalized output) per head. Phase 2, per (sequence, query head):
merges the splits. Keys are stored transposed in pages (mlcx.kernels.cpu.kv_pages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kv_pages import PageGeometry

NEG_INF = -3.0e38


@dataclass(frozen=True)
class DecodeShape:
    h_q: int
    geo: PageGeometry
    window: int = 0  # keys the query sees (sliding window); 0: all
    softcap: float = 0.0  # scores become softcap * tanh(score / softcap); 0: none

    @property
    def group(self) -> int:
        return self.h_q // self.geo.h_kv

    @property
    def splits(self) -> int:
        """Page splits per (sequence, kv head): enough items for a few cores at batch 1."""
        return max(1, 8 // self.geo.h_kv)

    @property
    def part(self) -> int:
        """Output features accumulated at once: group * part / 8 registers."""
        d = self.geo.head_dim
        return next(w for w in (32, 16, 8, d) if d % w == 0)


def _page_scores(sh: DecodeShape, bufs, seq, kv_head, page, following, scores) -> None:
    """scores[h, s] = q[seq, head h of the group] . key(page, s) * sm_scale.

    Also prefetches the `following` page's key and value slabs: each slab starts a new 4 KiB
    memory page, where hardware prefetchers would start cold."""
    geo, ps, g = sh.geo, sh.geo.page_size, sh.group
    # 8 independent FMA chains (two FMA units, four cycles each) over the group's heads
    chains = math.gcd(max(1, 8 // g), geo.head_dim)
    acc = T.alloc_buffer((g * chains, ps), "float32")
    base = T.bind(geo.key_base(page, kv_head))
    next_key = T.bind(geo.key_base(following, kv_head))
    next_value = T.bind(geo.value_base(following, kv_head))
    line = max(1, 64 // (ps * tvm.DataType(geo.dtype).bits // 8))  # features per 64-byte line
    for a in range(g * chains):
        T.buffer_store(acc, vec.splat(vec.f32(0.0), ps), [a, vec.ramp(0, ps)])
    with T.serial(0, geo.head_dim // chains) as cc:
        for part in range(chains):
            c = cc * chains + part
            if part % line == 0 or line > chains:
                vec.prefetch(bufs["flat"], [next_key + c * ps])
                vec.prefetch(bufs["flat"], [next_value + c * ps])
            keys = T.bind(vec.to_f32(bufs["flat"][vec.ramp(base + c * ps, ps)]))
            for h in range(g):
                query = T.Cast("float32", bufs["q"][seq, kv_head * g + h, c])
                update = acc[h * chains + part, vec.ramp(0, ps)] + vec.splat(query, ps) * keys
                T.buffer_store(acc, update, [h * chains + part, vec.ramp(0, ps)])
    scale = vec.splat(vec.f32(1.0 / math.sqrt(geo.head_dim)), ps)
    if geo.quantized:  # each key row's dot product times that row's scale
        scale = T.bind(scale * bufs["scales"][vec.ramp(geo.key_scales(page, kv_head), ps)])
    for h in range(g):
        total = acc[h * chains, vec.ramp(0, ps)]
        for part in range(1, chains):
            total = total + acc[h * chains + part, vec.ramp(0, ps)]
        score = total * scale
        if sh.softcap:
            score = vec.softcap(score, sh.softcap, ps)
        T.buffer_store(scores, score, [h, vec.ramp(0, ps)])


def _page_update(sh: DecodeShape, bufs, kv_head, page, valid, scores, state, out) -> None:
    """Fold one page (first `valid` slots) into the running max/sum/output of each head."""
    geo, ps, g, lanes = sh.geo, sh.geo.page_size, sh.group, sh.part
    corr = T.alloc_buffer((g,), "float32")
    value_scales = None
    if geo.quantized:  # each value row's scale goes into its weights (the sum takes none)
        value_scales = T.bind(bufs["scales"][vec.ramp(geo.value_scales(page, kv_head), ps)])
    # Slots past `valid` hold NEG_INF (set by _split_item); a vector Select here would
    # make LLVM take seconds to compile this function.
    with T.serial(0, g) as h:
        row = T.bind(scores[h, vec.ramp(0, ps)])
        top = T.bind(T.max(state[h, 0], vec.hmax(row, ps)))
        weights = T.bind(vec.exp(row - vec.splat(top, ps), ps))
        scaled = weights if value_scales is None else weights * value_scales
        T.buffer_store(scores, scaled, [h, vec.ramp(0, ps)])
        T.buffer_store(corr, vec.exp(state[h, 0] - top, 1), [h])
        T.buffer_store(state, state[h, 1] * corr[h] + vec.hsum(weights, ps), [h, 1])
        T.buffer_store(state, top, [h, 0])
    base = T.bind(geo.value_base(page, kv_head))
    acc = T.alloc_buffer((g, lanes), "float32")
    with T.serial(0, geo.head_dim // lanes) as part:
        for h in range(g):
            start = vec.ramp(part * lanes, lanes)
            T.buffer_store(acc, out[h, start] * vec.splat(corr[h], lanes), [h, vec.ramp(0, lanes)])
        with T.serial(0, valid) as s:
            value = T.bind(
                vec.to_f32(bufs["flat"][vec.ramp(base + s * geo.head_dim + part * lanes, lanes)])
            )
            for h in range(g):
                update = acc[h, vec.ramp(0, lanes)] + vec.splat(scores[h, s], lanes) * value
                T.buffer_store(acc, update, [h, vec.ramp(0, lanes)])
        for h in range(g):
            T.buffer_store(out, acc[h, vec.ramp(0, lanes)], [h, vec.ramp(part * lanes, lanes)])


def _split_item(sh: DecodeShape, bufs, partials, seq, kv_head, split) -> None:
    """Partial attention of one (sequence, kv head) over the split's share of its pages."""
    ps, g, d = sh.geo.page_size, sh.group, sh.geo.head_dim
    first = bufs["page_indptr"][seq]
    num_pages = T.bind(bufs["page_indptr"][seq + 1] - first)
    low, first_page = 0, 0  # the first key in the window, and its page
    if sh.window:  # pages before the window are never read (the KV manager may release them)
        kv_len = (num_pages - 1) * ps + bufs["last_page_len"][seq]
        low = T.bind(T.max(kv_len - sh.window, 0))
        first_page = T.bind(low // ps)
    per = T.bind((num_pages - first_page + sh.splits - 1) // sh.splits)
    begin = T.bind(T.min(first_page + split * per, num_pages))
    end = T.bind(T.min(begin + per, num_pages))
    scores = T.alloc_buffer((g, ps), "float32")
    state = T.alloc_buffer((g, 2), "float32")  # running max, running sum
    out = T.alloc_buffer((g, d), "float32")
    for h in range(g):
        T.buffer_store(state, vec.f32(NEG_INF), [h, 0])
        T.buffer_store(state, vec.f32(0.0), [h, 1])
        T.buffer_store(out, vec.splat(vec.f32(0.0), d), [h, vec.ramp(0, d)])
    with T.serial(begin, end) as p:
        page = T.bind(bufs["page_values"][first + p])
        following = bufs["page_values"][first + T.min(p + 1, end - 1)]
        valid = T.bind(T.Select(p == num_pages - 1, bufs["last_page_len"][seq], ps))
        _page_scores(sh, bufs, seq, kv_head, page, following, scores)
        with T.serial(valid, ps) as s, T.serial(0, g) as h:
            T.buffer_store(scores, vec.f32(NEG_INF), [h, s])
        if sh.window:  # slots of the first page before the window
            with T.serial(0, T.max(T.min(low - p * ps, ps), 0)) as s, T.serial(0, g) as h:
                T.buffer_store(scores, vec.f32(NEG_INF), [h, s])
        _page_update(sh, bufs, kv_head, page, valid, scores, state, out)
    for h in range(g):
        head = kv_head * g + h
        T.buffer_store(partials, state[h, 0], [seq, head, split, 0])
        T.buffer_store(partials, state[h, 1], [seq, head, split, 1])
        T.buffer_store(partials, out[h, vec.ramp(0, d)], [seq, head, split, vec.ramp(2, d)])


def _merge(sh: DecodeShape, bufs, partials, seq, head) -> None:
    """output[seq, head] = splits combined by their softmax statistics."""
    d = sh.geo.head_dim
    top = partials[seq, head, 0, 0]
    for s in range(1, sh.splits):
        top = T.max(top, partials[seq, head, s, 0])
    top = T.bind(top)
    total, acc = vec.f32(0.0), vec.splat(vec.f32(0.0), d)
    for s in range(sh.splits):
        weight = T.bind(T.exp(partials[seq, head, s, 0] - top))
        total = total + weight * partials[seq, head, s, 1]
        acc = acc + vec.splat(weight, d) * partials[seq, head, s, vec.ramp(2, d)]
    result = acc * vec.splat(vec.f32(1.0) / total, d)
    T.buffer_store(
        bufs["output"], T.Cast(vec.vtype(sh.geo.io_dtype, d), result), [seq, head, vec.ramp(0, d)]
    )


def decode_attention(sh: DecodeShape, bufs) -> None:
    """Emit both phases (inside a prim_func whose every sequence has one query token)."""
    batch, h_kv, splits = bufs["batch"], sh.geo.h_kv, sh.splits
    partials = T.alloc_buffer((batch, sh.h_q, splits, sh.geo.head_dim + 2), "float32")
    with T.parallel(0, batch * h_kv * splits) as item:
        seq = item // (h_kv * splits)
        _split_item(sh, bufs, partials, seq, item // splits % h_kv, item % splits)
    with T.parallel(0, batch * sh.h_q) as item:
        _merge(sh, bufs, partials, item // sh.h_q, item % sh.h_q)


def uses_decode(tokens: tirx.PrimExpr, batch: tirx.PrimExpr) -> tirx.PrimExpr:
    """Every sequence brings exactly one query token."""
    return tokens == batch
