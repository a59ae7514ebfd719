"""Page kernels for CPU targets: attention (mlcx.kernels.cpu.paged_attention) and page copy."""

from __future__ import annotations

import functools

from tvm.script import tirx as T

from mlcx.kernels.cpu.paged_attention import paged_attention_cpu
from mlcx.kernels.kv_layout import kv_element, kv_pages_shape, kv_row

__all__ = ["copy_pages", "paged_attention_cpu"]


@functools.cache  # TVMScript parses it in 0.04-0.09 s, once per compile; PrimFuncs are immutable
def copy_pages(h_kv: int, d: int, dtype: str, page_size: int, gpu: bool = False):
    """Copy whole pages `pairs[i, 0] -> pairs[i, 1]` in place (copy-on-write of shared pages).

    Reading and writing one buffer defeats dlight's analysis, so the GPU variant comes with its
    thread binding (one block per page pair) and is marked scheduled.
    """
    kind = "gpu" if gpu else "cpu"
    # whole rows of the pages' elements: a quantized row's scale moves with it
    d, dtype = kv_row(d, dtype, kind), kv_element(dtype, kind)
    per_page = 2 * h_kv * page_size * d
    threads = min(per_page, 256)
    rounds = (per_page + threads - 1) // threads

    @T.prim_func(s_tir=True)
    def copy_pages_cpu(var_pages: T.handle, var_pairs: T.handle):
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        num_pages = T.int64()
        n = T.int32()
        pages = T.match_buffer(var_pages, kv_pages_shape(num_pages, h_kv, page_size, d), dtype)
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
        pages = T.match_buffer(var_pages, kv_pages_shape(num_pages, h_kv, page_size, d), dtype)
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
