"""Causal attention over the paged KV cache on GPUs, for prefill, chunked prefill and decode.

A unit of `cfg.share` lanes computes one query row against one KV head for all the q heads that
share it (GQA): each lane owns every share-th feature of a head, so one key and one value row
are read once per unit with consecutive lanes on consecutive features (coalesced), the partial
dot products meet through subgroup shuffles, and the softmax runs online (one pass over the
keys, no score matrix). A workgroup holds UNITS consecutive units (row-major over query row, KV
head, split); its key loop runs to the longest row of the workgroup (a bound every lane computes
alike, so the shuffles stay in uniform control flow) and masks each row's keys beyond its causal
limit.
Without subgroups a unit is one lane that owns whole heads.

Rows are ragged runs of new tokens (q_indptr); row i of a sequence with L cached-plus-new keys
and n new tokens attends to keys 0 .. L - n + i, or with a sliding window of W keys to the last
W of those: keys (and pages) before a row's window are never read, so the KV manager may
release them.

Split-K (decode): with `splits` > 1, grid z cuts each row's keys into that many chunks, each
chunk writes its unnormalized output and (max, sum) to workspaces, and `merge_attention_gpu`
combines them; a long context then keeps many workgroups busy instead of one per KV head.

Attention sinks (gpt-oss): a sinks [h_q] parameter after last_page_len holds a logit per query
head that joins the softmax denominator and weighs no value; a row's first chunk starts its
running max at the sink and its sum at 1, so the merge counts the sink once.

The pages may hold another dtype than q and the output (mlcx.kernels.gpu.kv_rows): each row is
read as float32, and an int8 row's score and value weight take its scale. A lane then owns
whole words (runs of four features), so a unit has as many lanes as the row's words allow.
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS, GpuConfig
from mlcx.kernels.gpu.kv_rows import GpuRows
from mlcx.kernels.gpu.share import allreduce

UNITS = 8  # units of a workgroup (32 threads: a warp on NVIDIA)
NEG = -1e30  # finite: the first masked key after a valid one must not give inf - inf


def _params(h_q: int, d: int, rows: GpuRows, dtype: str, splits: int, sinks: bool):
    tokens, batch = tirx.Var("tokens", "int64"), tirx.Var("batch", "int64")
    nnz = tirx.Var("nnz_pages", "int64")

    def param(name, shape, dt):
        return T.match_buffer(T.arg(name, T.handle()), shape, dt)

    bufs = {
        "q": param("q", (tokens, h_q, d), dtype),
        "q_indptr": param("q_indptr", (batch + 1,), "int32"),
        "pages": rows.param(),
        "page_indptr": param("page_indptr", (batch + 1,), "int32"),
        "page_values": param("page_values", (nnz,), "int32"),
        "last_page_len": param("last_page_len", (batch,), "int32"),
    }
    if sinks:
        bufs["sinks"] = param("sinks", (h_q,), dtype)
    if splits == 1:
        bufs["out"] = param("out", (tokens, h_q, d), dtype)
    else:
        bufs["partial"] = param("partial", (splits, tokens, h_q, d), "float32")
        bufs["stats"] = param("stats", (splits, tokens, h_q, 2), "float32")
    return tokens, batch, bufs


class _Row:
    """Where query row r sits: its sequence, first page index, causal key count (`limit`), and
    the first key (`start`) and number of keys (`count`) it sees."""

    def __init__(self, bufs, batch, page_size: int, r, window: int = 0):
        qi = bufs["q_indptr"]
        b = T.alloc_buffer((1,), "int32", scope="local")
        T.buffer_store(b, tirx.const(0, "int32"), [0])
        with T.serial(0, batch) as s:
            T.buffer_store(b, T.Select(qi[s] <= r, s.astype("int32"), b[0]), [0])
        seq = T.bind(b[0])
        pi = bufs["page_indptr"]
        pages = T.bind(pi[seq + 1] - pi[seq])
        keys = T.bind(T.max(pages - 1, 0) * page_size + bufs["last_page_len"][seq])
        self.first_page = T.bind(pi[seq])
        self.limit = T.bind(keys - (qi[seq + 1] - qi[seq]) + (r - qi[seq]) + 1)
        self.start = T.bind(T.max(self.limit - window, 0)) if window else 0
        self.count = T.bind(self.limit - self.start) if window else self.limit


def _chunk(limit, splits: int):
    return (limit + splits - 1) // splits


def _limits_max(bufs, batch, page_size, units, count, per_row: int, splits: int, window: int):
    """The longest chunk of keys among the workgroup's `units` (in range), the same value in
    every lane."""
    most = T.alloc_buffer((1,), "int32", scope="local")
    T.buffer_store(most, tirx.const(0, "int32"), [0])
    for u in units:
        row = _Row(bufs, batch, page_size, T.min(u, count - 1) // per_row, window)
        T.buffer_store(most, T.max(most[0], _chunk(row.count, splits)), [0])
    return T.bind(most[0])


def paged_attention_gpu(
    h_q: int,
    h_kv: int,
    d: int,
    page_size: int,
    dtype: str,
    cfg: GpuConfig,
    splits: int = 1,
    window: int = 0,
    softcap: float = 0.0,
    cache_dtype: str = "",
    sinks: bool = False,
) -> tirx.PrimFunc:
    """The kernel for one geometry; `window` > 0: each row sees only its last `window` keys;
    `softcap` > 0: scores become softcap * tanh(score / softcap); the pages hold `cache_dtype`
    ("": `dtype`); `sinks`: the sinks parameter (in `dtype`; not capped)."""
    rows = GpuRows(h_kv, d, page_size, cache_dtype or dtype)
    share = math.gcd(cfg.share, rows.words) if cfg.subgroups else 1
    if share not in (1, 2, 4):
        raise ValueError(f"a unit of {share} lanes cannot reduce by shuffles; use share 2 or 4")
    group, per = h_q // h_kv, d // share
    name = "paged_attention_gpu" if splits == 1 else "paged_attention_split_gpu"
    with IRBuilder() as ib, T.prim_func():
        T.func_name(name)
        T.func_attr(KERNEL_ATTRS)
        tokens, batch, bufs = _params(h_q, d, rows, dtype, splits, sinks)
        # a unit is (query row, KV head, split), the split fastest: decode's few rows still
        # fill workgroups, and a workgroup's rows are neighbours (similar key counts)
        per_row = h_kv * splits
        count = tokens * per_row
        bx, tx = T.env_thread("blockIdx.x"), T.env_thread("threadIdx.x")
        with T.launch_thread(bx, (count + UNITS - 1) // UNITS), T.launch_thread(tx, UNITS * share):
            lane = tx % share
            units = [bx * UNITS + u for u in range(UNITS)]
            keys = _limits_max(bufs, batch, page_size, units, count, per_row, splits, window)
            unclamped = bx * UNITS + tx // share
            unit = T.bind(T.min(unclamped, count - 1))  # spare units redo the last one, unstored
            r, kh, z = unit // per_row, unit // splits % h_kv, unit % splits
            row = _Row(bufs, batch, page_size, r, window)
            span = (z, _chunk(row.count, splits))
            unit_lanes = (rows, share, lane)
            o, m, denom = _attend(bufs, unit_lanes, group, per, kh, r, row, keys, span, softcap)
            with T.If(unclamped < count), T.Then():
                if splits == 1:
                    _store(bufs, unit_lanes, group, per, dtype, kh, r, o, denom)
                else:
                    _store_partial(bufs, unit_lanes, group, per, kh, r, z, o, m, denom)
    return ib.get()


def _attend(bufs, unit_lanes, group, per, kh, r, row, keys, span, softcap):
    rows, share, lane = unit_lanes
    page_size = rows.page_size
    scale = tirx.const(1.0 / math.sqrt(rows.d), "float32")
    q = T.alloc_buffer((group * per,), "float32", scope="local")
    o = T.alloc_buffer((group * per,), "float32", scope="local")
    m = T.alloc_buffer((group,), "float32", scope="local")
    denom = T.alloc_buffer((group,), "float32", scope="local")
    z, chunk = span
    for h in range(group):
        _start_softmax(bufs, kh * group + h, z, m, denom, h)
        for e in range(per):
            head = kh * group + h
            T.buffer_store(
                q,
                bufs["q"][r, head, rows.feature(lane, share, e)].astype("float32") * scale,
                [h * per + e],
            )
            T.buffer_store(o, tirx.const(0.0, "float32"), [h * per + e])
    pages = bufs["pages"]
    # one comparison, not `i < chunk and j < limit`: WGSL's && is a branch, and repeated in
    # every use it made SwiftShader's shader compiler run out of memory. Kept in a local
    # buffer because the simplifier would split `i < min(a, b)` back into two.
    end = T.alloc_buffer((1,), "int32", scope="local")
    T.buffer_store(end, T.min(chunk, row.count - z * chunk), [0])
    with T.serial(0, keys) as i:
        j = row.start + z * chunk + i
        valid = T.bind(i < end[0])
        jj = T.bind(T.min(j, T.max(row.limit - 1, 0)))
        page = T.bind(bufs["page_values"][row.first_page + jj // page_size])
        slot = T.bind(jj % page_size)
        k, k_scale = rows.read(pages, page, 0, kh, slot, lane, share, per)
        v, v_scale = rows.read(pages, page, 1, kh, slot, lane, share, per)
        for h in range(group):
            dot = sum((q[h * per + e] * k[e] for e in range(1, per)), q[h * per] * k[0])
            score = allreduce(T.bind(dot), lane, share) if share > 1 else dot
            if k_scale is not None:
                score = score * k_scale
            if softcap:
                cap = tirx.const(softcap, "float32")
                score = T.tanh(score / cap) * cap
            score = T.bind(T.Select(valid, score, tirx.const(NEG, "float32")))
            new_m = T.bind(T.max(m[h], score))
            corr, p = T.bind(T.exp(m[h] - new_m)), T.bind(T.exp(score - new_m))
            T.buffer_store(denom, denom[h] * corr + p, [h])
            T.buffer_store(m, new_m, [h])
            if v_scale is not None:  # the value's weight, not the sum's
                p = T.bind(p * v_scale)
            for e in range(per):
                i = h * per + e
                T.buffer_store(o, o[i] * corr + p * v[e], [i])
    return o, m, denom


def _start_softmax(bufs, head, z, m, denom, h) -> None:
    """Running max and sum before any key: (NEG, 0), or (sink, 1) in the first chunk."""
    m0, sum0 = tirx.const(NEG, "float32"), tirx.const(0.0, "float32")
    if "sinks" in bufs:
        first = z == 0
        m0 = T.Select(first, bufs["sinks"][head].astype("float32"), m0)
        sum0 = T.Select(first, tirx.const(1.0, "float32"), sum0)
    T.buffer_store(m, m0, [h])
    T.buffer_store(denom, sum0, [h])


def _store(bufs, unit_lanes, group, per, dtype, kh, r, o, denom):
    rows, share, lane = unit_lanes
    for h in range(group):
        inv = T.bind(tirx.const(1.0, "float32") / denom[h])
        for e in range(per):
            value = (o[h * per + e] * inv).astype(dtype)
            T.buffer_store(bufs["out"], value, [r, kh * group + h, rows.feature(lane, share, e)])


def _store_partial(bufs, unit_lanes, group, per, kh, r, z, o, m, denom):
    rows, share, lane = unit_lanes
    for h in range(group):
        head = kh * group + h
        for e in range(per):
            index = [z, r, head, rows.feature(lane, share, e)]
            T.buffer_store(bufs["partial"], o[h * per + e], index)
        with T.If(lane == 0), T.Then():
            T.buffer_store(bufs["stats"], m[h], [z, r, head, 0])
            T.buffer_store(bufs["stats"], denom[h], [z, r, head, 1])


def merge_attention_gpu(h_q: int, d: int, dtype: str, splits: int) -> tirx.PrimFunc:
    """(partial [S, t, h_q, d], stats [S, t, h_q, 2]) -> out [t, h_q, d]: the chunks' outputs
    weighted by exp(max_z - max) and normalized by the weighted sums; a thread per feature."""
    with IRBuilder() as ib, T.prim_func():
        T.func_name("merge_attention_gpu")
        T.func_attr(KERNEL_ATTRS)
        tokens = tirx.Var("tokens", "int64")

        def param(name, shape, dt):
            return T.match_buffer(T.arg(name, T.handle()), shape, dt)

        partial = param("partial", (splits, tokens, h_q, d), "float32")
        stats = param("stats", (splits, tokens, h_q, 2), "float32")
        out = param("out", (tokens, h_q, d), dtype)
        r, h, e = (
            T.env_thread("blockIdx.x"),
            T.env_thread("blockIdx.y"),
            T.env_thread("threadIdx.x"),
        )
        with T.launch_thread(r, tokens), T.launch_thread(h, h_q), T.launch_thread(e, d):
            most = _sum_max([stats[z, r, h, 0] for z in range(splits)], T.max)
            weights = [T.bind(T.exp(stats[z, r, h, 0] - most)) for z in range(splits)]
            total = _sum_max([w * stats[z, r, h, 1] for z, w in enumerate(weights)])
            value = _sum_max([w * partial[z, r, h, e] for z, w in enumerate(weights)])
            T.buffer_store(out, (value / total).astype(dtype), [r, h, e])
    return ib.get()


def _sum_max(values, combine=None):
    out = values[0]
    for v in values[1:]:
        out = combine(out, v) if combine else out + v
    return T.bind(out)
