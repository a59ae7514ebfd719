"""Paged causal attention for CPU targets, written for mlcx.

One kernel serves prefill (ragged query runs, with or without a cached prefix), decode (one
query token per sequence) and verify steps (a few per sequence): the last two are
mlcx.kernels.cpu.paged_decode's. Prefill work items are
(query head, slice of row blocks), so long prompts spread over all cores.

Keys are stored transposed inside each page (mlcx.kernels.cpu.kv_pages), so the scores of a block
of query rows against one page are page_size-lane vector FMAs, one per feature. Each row then
takes an exact softmax over its visible scores (vectorized exp), and the block's rows sum the
values together: each value row is loaded once per block (8 rows at page size 16), its weight
0 for rows that do not see it. Long prompts are processed in the compiled chunk (prefill_chunk
tokens a step), so a row block's scores span its context once.

Inputs follow the layout of TVM's paged kernels: q [tokens, h_q, d], q_indptr [b + 1],
pages [num_pages, 2, h_kv, page_size, d], page_indptr [b + 1], page_values [nnz_pages],
last_page_len [b]. Query token i of a run of n tokens in a sequence holding kv_len tokens sits
at position q = kv_len - n + i and sees keys 0 .. q, or with a sliding window of W keys only
q - W + 1 .. q: pages wholly before a row block's window are never read, so the KV manager may
release them (their page-table entries are placeholders). With attention sinks (gpt-oss), a
sinks [h_q] parameter follows last_page_len: head h's sink logit joins each row's softmax
denominator as one more term, exp(sink - max), and weighs no value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kv_pages import PageGeometry
from mlcx.kernels.cpu.paged_decode import (
    DecodeShape,
    decode_attention,
    fewest_rows_over,
    uses_decode,
    verify_rows,
)
from mlcx.kernels.lowering_marks import EXACT_BUFFERS

SLICES = 4  # row-block slices per head: work items = h_q * SLICES
NEG_INF = -3.0e38


@dataclass(frozen=True)
class _Shape:
    h_q: int
    geo: PageGeometry
    rows: int  # query rows sharing each key load (page_size * rows accumulator lanes)
    window: int = 0  # keys each query sees (sliding window); 0: all earlier keys
    softcap: float = 0.0  # scores become softcap * tanh(score / softcap); 0: none
    sinks: bool = False  # a sink logit per query head joins each softmax's denominator

    @property
    def group(self) -> int:
        return self.h_q // self.geo.h_kv

    @property
    def value_lanes(self) -> int:
        d = self.geo.head_dim
        # rows * w / 16 accumulator registers, at most 8: at 16 (8 rows of 32) LLVM spills and
        # a 4000-token prefill's attention took 2.8x as long (Zen 4, measured in the model)
        return next(w for w in (32, 16, 8, d) if d % w == 0 and (self.rows * w <= 128 or w == d))


def _scores(sh: _Shape, bufs, seq, head, row0, n, pages, scores) -> None:
    """scores[r, page * ps + s] = q[row0 + r] . key(page, s) * sm_scale for the block's rows.

    Features are split over `chains` partial sums per row so that enough independent FMA
    chains are in flight (one row alone would wait on FMA latency)."""
    geo, ps, rows = sh.geo, sh.geo.page_size, sh.rows
    chains = math.gcd(max(1, 8 // rows), geo.head_dim)
    acc = T.alloc_buffer((rows * chains, ps), "float32")
    first = bufs["q_indptr"][seq]
    with T.serial(*pages) as p:
        page = bufs["page_values"][bufs["page_indptr"][seq] + p]
        base = T.bind(geo.key_base(page, head // sh.group))
        for a in range(rows * chains):
            T.buffer_store(acc, vec.splat(vec.f32(0.0), ps), [a, vec.ramp(0, ps)])
        with T.serial(0, geo.head_dim // chains) as cc:
            for part in range(chains):
                c = cc * chains + part
                keys = T.bind(vec.to_f32(bufs["flat"][vec.ramp(base + c * ps, ps)]))
                for r in range(rows):
                    query = T.Cast("float32", bufs["q"][first + T.min(row0 + r, n - 1), head, c])
                    a = r * chains + part
                    update = acc[a, vec.ramp(0, ps)] + vec.splat(query, ps) * keys
                    T.buffer_store(acc, update, [a, vec.ramp(0, ps)])
        scale = vec.splat(vec.f32(1.0 / math.sqrt(geo.head_dim)), ps)
        if geo.quantized:  # each key row's dot product times that row's scale
            start = geo.key_scales(page, head // sh.group)
            scale = T.bind(scale * bufs["scales"][vec.ramp(start, ps)])
        for r in range(rows):
            total = acc[r * chains, vec.ramp(0, ps)]
            for part in range(1, chains):
                total = total + acc[r * chains + part, vec.ramp(0, ps)]
            score = total * scale
            if sh.softcap:
                score = vec.softcap(score, sh.softcap, ps)
            T.buffer_store(scores, score, [r, vec.ramp(p * ps, ps)])


def _softmax(sh: _Shape, scores, r, visible, pages, sink=None):
    """Exponentiate row r's visible scores (keys visible - window .. visible - 1 with a
    window) in place; return their sum, plus exp(sink) on the same scale with a `sink`."""
    ps = sh.geo.page_size
    best = T.alloc_buffer((ps,), "float32")
    total = T.alloc_buffer((ps,), "float32")
    T.buffer_store(best, vec.splat(vec.f32(NEG_INF), ps), [vec.ramp(0, ps)])
    T.buffer_store(total, vec.splat(vec.f32(0.0), ps), [vec.ramp(0, ps)])

    def masked(p, value):
        seen = vec.ramp(p * ps, ps) < vec.splat(visible, ps)
        if sh.window:
            seen = T.And(seen, vec.ramp(p * ps, ps) >= vec.splat(visible - sh.window, ps))
        return T.Select(seen, value, vec.splat(vec.f32(NEG_INF), ps))

    with T.serial(*pages) as p:
        row = masked(p, scores[r, vec.ramp(p * ps, ps)])
        T.buffer_store(best, T.max(best[vec.ramp(0, ps)], row), [vec.ramp(0, ps)])
    top = vec.hmax(best[vec.ramp(0, ps)], ps)
    top = T.bind(top if sink is None else T.max(top, sink))
    with T.serial(*pages) as p:
        shifted = masked(p, scores[r, vec.ramp(p * ps, ps)]) - vec.splat(top, ps)
        weight = T.bind(vec.exp(shifted, ps))
        T.buffer_store(scores, weight, [r, vec.ramp(p * ps, ps)])
        T.buffer_store(total, total[vec.ramp(0, ps)] + weight, [vec.ramp(0, ps)])
    total_sum = vec.hsum(total[vec.ramp(0, ps)], ps)
    return T.bind(total_sum if sink is None else total_sum + vec.exp(sink - top, 1))


def _values(sh: _Shape, bufs, seq, head, row0, n, keys, totals, scores) -> None:
    """output[row, head] = sum_j weight_j * value_j / total for the block's rows, keys
    `keys` = (first, last) of the block: each value row is loaded once for all the block's
    rows, whose weights are 0 for keys they do not see (the softmax wrote them so)."""
    geo, ps, rows = sh.geo, sh.geo.page_size, sh.rows
    lanes = sh.value_lanes
    acc = T.alloc_buffer((rows, lanes), "float32")
    first, last = keys
    with T.serial(0, geo.head_dim // lanes) as part:
        for r in range(rows):
            T.buffer_store(acc, vec.splat(vec.f32(0.0), lanes), [r, vec.ramp(0, lanes)])
        with T.serial(first // ps, (last + ps - 1) // ps) as p:
            page = bufs["page_values"][bufs["page_indptr"][seq] + p]
            base = T.bind(geo.value_base(page, head // sh.group) + part * lanes)
            scales = geo.value_scales(page, head // sh.group) if geo.quantized else None
            with T.serial(0, T.min(ps, last - p * ps)) as s:
                value = vec.to_f32(bufs["flat"][vec.ramp(base + s * geo.head_dim, lanes)])
                if scales is not None:  # the value row's scale
                    value = value * vec.splat(bufs["scales"][scales + s], lanes)
                value = T.bind(value)
                for r in range(rows):
                    weight = vec.splat(scores[r, p * ps + s], lanes)
                    update = acc[r, vec.ramp(0, lanes)] + weight * value
                    T.buffer_store(acc, update, [r, vec.ramp(0, lanes)])
        for r in range(rows):
            with T.If(row0 + r < n), T.Then():
                inv = vec.splat(vec.f32(1.0) / totals[r], lanes)
                out = T.Cast(vec.vtype(geo.io_dtype, lanes), acc[r, vec.ramp(0, lanes)] * inv)
                row = bufs["q_indptr"][seq] + row0 + r
                T.buffer_store(bufs["output"], out, [row, head, vec.ramp(part * lanes, lanes)])


def _block(sh: _Shape, bufs, seq, head, block, scores) -> None:
    """Rows block * rows .. of sequence seq, for one query head."""
    ps, rows = sh.geo.page_size, sh.rows
    n = T.bind(bufs["q_indptr"][seq + 1] - bufs["q_indptr"][seq])
    num_pages = bufs["page_indptr"][seq + 1] - bufs["page_indptr"][seq]
    kv_len = T.bind((num_pages - 1) * ps + bufs["last_page_len"][seq])
    row0 = block * rows
    last_visible = T.bind(kv_len - n + T.min(row0 + rows, n))
    pages_seen = T.bind((last_visible + ps - 1) // ps)
    first_page = 0
    if sh.window:  # the block's first row has the earliest window
        first_page = T.bind(T.max(kv_len - n + row0 + 1 - sh.window, 0) // ps)
    pages = (first_page, pages_seen)
    _scores(sh, bufs, seq, head, row0, n, pages, scores)
    totals = T.alloc_buffer((rows,), "float32")
    sink = T.bind(T.Cast("float32", bufs["sinks"][head])) if sh.sinks else None
    for r in range(rows):  # rows past the run repeat its last row (not stored)
        visible = T.bind(kv_len - n + T.min(row0 + r, n - 1) + 1)
        T.buffer_store(totals, _softmax(sh, scores, r, visible, pages, sink), [r])
    keys = (first_page * ps, last_visible)
    _values(sh, bufs, seq, head, row0, n, keys, totals, scores)


def _params(sh: _Shape) -> dict:
    """Declare the kernel parameters (the rows setting does not matter here)."""
    geo, d = sh.geo, sh.geo.head_dim
    batch, tokens, nnz = (tirx.Var(n, "int32") for n in ("batch", "tokens", "nnz"))
    bufs = {"q": T.match_buffer(T.arg("q", T.handle()), (tokens, sh.h_q, d), geo.io_dtype)}
    bufs["q_indptr"] = T.match_buffer(T.arg("q_indptr", T.handle()), (batch + 1,), "int32")
    bufs["pages"] = geo.pages_param()
    bufs["page_indptr"] = T.match_buffer(T.arg("page_indptr", T.handle()), (batch + 1,), "int32")
    bufs["page_values"] = T.match_buffer(T.arg("page_values", T.handle()), (nnz,), "int32")
    bufs["last_page_len"] = T.match_buffer(T.arg("last_page_len", T.handle()), (batch,), "int32")
    if sh.sinks:
        bufs["sinks"] = T.match_buffer(T.arg("sinks", T.handle()), (sh.h_q,), geo.io_dtype)
    out_shape = (tokens, sh.h_q, d)
    bufs["output"] = T.match_buffer(T.arg("output", T.handle()), out_shape, geo.io_dtype)
    bufs["batch"], bufs["nnz"], bufs["tokens"] = batch, nnz, tokens
    views = geo.views(bufs["pages"])
    bufs["flat"], bufs["scales"] = views.flat, views.scales
    return bufs


def _sequence(sh: _Shape, bufs, seq, head, part, scores) -> None:
    """This item's row blocks (part, part + SLICES, ...) of one sequence."""
    n = bufs["q_indptr"][seq + 1] - bufs["q_indptr"][seq]
    blocks = (n + sh.rows - 1) // sh.rows
    with T.serial(0, (blocks - part + SLICES - 1) // SLICES) as i:
        _block(sh, bufs, seq, head, part + i * SLICES, scores)


def paged_attention_cpu(
    h_kv: int,
    h_q: int,
    d: int,
    dtype: str,
    page_size: int,
    act_dtype: str = "",
    window: int = 0,
    softcap: float = 0.0,
    sinks: bool = False,
) -> tirx.PrimFunc:
    """The kernel for one attention geometry; `window` > 0 makes it sliding-window attention
    (each query sees its last `window` keys, itself included), `softcap` > 0 caps the scores
    at +-softcap with tanh (Gemma 2's attention logit softcapping), `sinks` adds the sinks
    parameter (gpt-oss's attention sinks, in the activations' dtype; not capped)."""
    if window < 0 or softcap < 0:
        raise ValueError(f"window and softcap must be >= 0 (0: none), got {window}, {softcap}")
    geo = PageGeometry(h_kv, d, page_size, dtype, act_dtype)
    single = _Shape(h_q, geo, 1, window, softcap, sinks)  # one row per sequence
    blocked = _Shape(h_q, geo, max(1, min(8, 128 // page_size)), window, softcap, sinks)
    with IRBuilder() as ib, T.prim_func():
        # one exported symbol per variant a model uses (local and global layers)
        variant = f"_w{window}" if window else ""
        variant += f"_cap{softcap:g}".replace(".", "p") if softcap else ""
        variant += "_sinks" if sinks else ""
        T.func_name("paged_attention_cpu" + variant)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, EXACT_BUFFERS: True})
        bufs = _params(blocked)
        with T.If(uses_decode(bufs["tokens"], bufs["batch"])):
            with T.Then():
                decode_attention(DecodeShape(h_q, geo, window, softcap, sinks=sinks), bufs)
            with T.Else():
                _few_rows_or_prefill(bufs, single, blocked)
    return ib.get()


def _few_rows_or_prefill(bufs, single: _Shape, blocked: _Shape) -> None:
    """A step whose sequences bring a few rows each (speculative verify) reads each page once
    for all of them and the GQA group (paged_decode); longer runs take the row blocks."""
    rows = 1 if blocked.window else verify_rows(blocked.group)
    if rows == 1:
        _prefill(bufs, single, blocked)
        return
    with T.If(fewest_rows_over(bufs, rows)):
        with T.Then():
            shape = DecodeShape(blocked.h_q, blocked.geo, 0, blocked.softcap, rows, blocked.sinks)
            decode_attention(shape, bufs)
        with T.Else():
            _prefill(bufs, single, blocked)


def _prefill(bufs, single: _Shape, blocked: _Shape) -> None:
    page_size, h_q = blocked.geo.page_size, blocked.h_q
    # One workspace for all items (an allocation per item costs more than a decode step).
    keys = bufs["nnz"] * page_size
    workspace = T.alloc_buffer((h_q * SLICES * blocked.rows * keys,), "float32")
    with T.parallel(0, h_q * SLICES) as item:
        head, part = item // SLICES, item % SLICES
        offset = item * blocked.rows * keys
        scores = T.decl_buffer(
            (blocked.rows, keys), "float32", data=workspace.data, elem_offset=offset
        )
        with T.serial(0, bufs["batch"]) as seq:
            n = bufs["q_indptr"][seq + 1] - bufs["q_indptr"][seq]
            with T.If(n == 1):
                with T.Then():
                    _sequence(single, bufs, seq, head, part, scores)
                with T.Else():
                    _sequence(blocked, bufs, seq, head, part, scores)
