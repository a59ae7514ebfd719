"""Paged causal attention for CPU targets, written for mlcx.

TVM ships CPU attention kernels too, but its prefill kernel scans every slot of the page pool
for each query row and both run on one core; this one walks only each sequence's own pages and
runs query heads in parallel. One kernel serves prefill (ragged query runs, with or without a
cached prefix) and decode (one query token per sequence).

Inputs follow the layout of TVM's paged kernels: q [tokens, h_q, d], q_indptr [b + 1],
pages [num_pages, 2, h_kv, page_size, d] (0 = keys, 1 = values), page_indptr [b + 1],
page_values [nnz_pages], last_page_len [b]. Query token i of a run of n tokens in a sequence
holding kv_len tokens sits at position kv_len - n + i and sees keys 0 .. kv_len - n + i.
"""

from __future__ import annotations

import math

from tvm.script import tirx as T


def paged_attention_cpu(h_kv: int, h_q: int, d: int, dtype: str, page_size: int):
    group = h_q // h_kv
    sm_scale = 1.0 / math.sqrt(d)
    neg_inf = -3.0e38

    @T.prim_func(s_tir=True)
    def paged_attention(
        var_q: T.handle,
        var_q_indptr: T.handle,
        var_pages: T.handle,
        var_page_indptr: T.handle,
        var_page_values: T.handle,
        var_last_page_len: T.handle,
        var_output: T.handle,
    ):
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        batch = T.int32()
        tokens = T.int32()
        nnz = T.int32()
        num_pages = T.int64()
        q = T.match_buffer(var_q, (tokens, h_q, d), dtype)
        q_indptr = T.match_buffer(var_q_indptr, (batch + 1,), "int32")
        pages = T.match_buffer(var_pages, (num_pages, 2, h_kv, page_size, d), dtype)
        page_indptr = T.match_buffer(var_page_indptr, (batch + 1,), "int32")
        page_values = T.match_buffer(var_page_values, (nnz,), "int32")
        last_page_len = T.match_buffer(var_last_page_len, (batch,), "int32")
        output = T.match_buffer(var_output, (tokens, h_q, d), dtype)

        for h in T.parallel(h_q):
            for b in T.serial(batch):
                for i in T.serial(q_indptr[b + 1] - q_indptr[b]):
                    with T.sblock("row"):
                        # Regions are spelled out: the defaults would name let-bound lengths.
                        T.reads(
                            q[q_indptr[b] + i, h, 0:d],
                            pages[0:num_pages, 0:2, h // group, 0:page_size, 0:d],
                        )
                        T.writes(output[q_indptr[b] + i, h, 0:d])
                        acc = T.sblock_alloc_buffer((d,), "float32")
                        qrow = T.sblock_alloc_buffer((d,), "float32")
                        state = T.sblock_alloc_buffer((4,), "float32")  # max, sum, score, corr
                        row: T.let[T.int32] = q_indptr[b] + i
                        n_pages: T.let[T.int32] = page_indptr[b + 1] - page_indptr[b]
                        kv_len: T.let[T.int32] = (n_pages - 1) * page_size + last_page_len[b]
                        visible: T.let[T.int32] = kv_len - (q_indptr[b + 1] - q_indptr[b]) + i + 1
                        for c in T.vectorized(d):
                            acc[c] = T.float32(0)
                            qrow[c] = T.Cast("float32", q[row, h, c]) * T.float32(sm_scale)
                        state[0] = T.float32(neg_inf)
                        state[1] = T.float32(0)
                        for j in T.serial(visible):
                            page: T.let[T.int32] = page_values[page_indptr[b] + j // page_size]
                            slot: T.let[T.int32] = j % page_size
                            state[2] = T.float32(0)
                            for c in T.serial(d):
                                state[2] = state[2] + qrow[c] * T.Cast(
                                    "float32", pages[page, 0, h // group, slot, c]
                                )
                            state[3] = T.exp(state[0] - T.max(state[0], state[2]))
                            state[0] = T.max(state[0], state[2])
                            state[2] = T.exp(state[2] - state[0])
                            state[1] = state[1] * state[3] + state[2]
                            for c in T.vectorized(d):
                                acc[c] = acc[c] * state[3] + state[2] * T.Cast(
                                    "float32", pages[page, 1, h // group, slot, c]
                                )
                        for c in T.vectorized(d):
                            output[row, h, c] = T.Cast(dtype, acc[c] / state[1])

    return paged_attention


def copy_pages(h_kv: int, d: int, dtype: str, page_size: int, gpu: bool = False):
    """Copy whole pages `pairs[i, 0] -> pairs[i, 1]` in place (copy-on-write of shared pages).

    Reading and writing one buffer defeats dlight's analysis, so the GPU variant comes with its
    thread binding (one block per page pair) and is marked scheduled.
    """
    per_page = 2 * h_kv * page_size * d
    threads = min(per_page, 256)
    rounds = (per_page + threads - 1) // threads

    @T.prim_func(s_tir=True)
    def copy_pages_cpu(var_pages: T.handle, var_pairs: T.handle):
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        num_pages = T.int64()
        n = T.int32()
        pages = T.match_buffer(var_pages, (num_pages, 2, h_kv, page_size, d), dtype)
        pairs = T.match_buffer(var_pairs, (n, 2), "int32")
        for i in T.serial(n):
            for e in T.parallel(per_page):
                with T.sblock("copy"):
                    T.reads(pages[pairs[i, 0], 0:2, 0:h_kv, 0:page_size, 0:d], pairs[i, 0:2])
                    T.writes(pages[pairs[i, 1], 0:2, 0:h_kv, 0:page_size, 0:d])
                    pages[
                        pairs[i, 1],
                        e // (h_kv * page_size * d),
                        e // (page_size * d) % h_kv,
                        e // d % page_size,
                        e % d,
                    ] = pages[
                        pairs[i, 0],
                        e // (h_kv * page_size * d),
                        e // (page_size * d) % h_kv,
                        e // d % page_size,
                        e % d,
                    ]

    @T.prim_func(s_tir=True)
    def copy_pages_gpu(var_pages: T.handle, var_pairs: T.handle):
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        num_pages = T.int64()
        n = T.int32()
        pages = T.match_buffer(var_pages, (num_pages, 2, h_kv, page_size, d), dtype)
        pairs = T.match_buffer(var_pairs, (n, 2), "int32")
        for i in T.thread_binding(n, thread="blockIdx.x"):
            for t in T.thread_binding(threads, thread="threadIdx.x"):
                for r in T.serial(rounds):
                    with T.sblock("copy"):
                        T.reads(pages[pairs[i, 0], 0:2, 0:h_kv, 0:page_size, 0:d], pairs[i, 0:2])
                        T.writes(pages[pairs[i, 1], 0:2, 0:h_kv, 0:page_size, 0:d])
                        if r * threads + t < per_page:
                            pages[
                                pairs[i, 1],
                                (r * threads + t) // (h_kv * page_size * d),
                                (r * threads + t) // (page_size * d) % h_kv,
                                (r * threads + t) // d % page_size,
                                (r * threads + t) % d,
                            ] = pages[
                                pairs[i, 0],
                                (r * threads + t) // (h_kv * page_size * d),
                                (r * threads + t) // (page_size * d) % h_kv,
                                (r * threads + t) // d % page_size,
                                (r * threads + t) % d,
                            ]

    return copy_pages_gpu if gpu else copy_pages_cpu
