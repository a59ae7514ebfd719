"""The GPU kernel that appends new keys and values to the KV pages, in any cache dtype.

A workgroup per token, a thread per element of a row (a feature, or a word of four int8
features), consecutive threads on consecutive elements (coalesced); the workgroup covers the
token's 2 * h_kv rows (keys, then values) a few rows at a time. An int8 row first finds its
max magnitude: each thread puts its four features' in shared memory and, past a barrier, reads
its row's. Floats are cast to the cache dtype. A slot of -1 writes nothing.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.gpu.kv_rows import GpuRows

THREADS = 128
KV_DTYPE_ATTR = "mlcx.kv_dtype"  # the cache dtype a GPU append kernel writes (pages may be words)


def row_max(amax: tirx.Buffer, base, count: int):
    """The largest of amax[base .. base + count) (shared memory, past a barrier)."""
    top = T.alloc_buffer((1,), "float32", scope="local")
    T.buffer_store(top, tirx.const(0.0, "float32"), [0])
    with T.serial(0, count) as j:
        T.buffer_store(top, T.max(top[0], amax[base + j]), [0])
    return T.bind(top[0])


def magnitude(values):
    out = T.abs(values[0])
    for v in values[1:]:
        out = T.max(out, T.abs(v))
    return T.bind(out)


def kv_append_gpu(h_kv: int, d: int, page_size: int, cache_dtype: str, dtype: str) -> tirx.PrimFunc:
    """pages[slots[t]] <- k[t], v[t] ([t, h_kv, d] of `dtype`) for every token whose slot is not
    -1, stored as `cache_dtype` (in place)."""
    rows = GpuRows(h_kv, d, page_size, cache_dtype)
    cols, n = rows.words, rows.per_element
    groups = max(1, THREADS // cols)
    with IRBuilder() as ib, T.prim_func():
        T.func_name("kv_append_gpu")
        T.func_attr({**KERNEL_ATTRS, KV_DTYPE_ATTR: cache_dtype})
        tokens = tirx.Var("tokens", "int64")
        pages = rows.param()
        k = T.match_buffer(T.arg("k", T.handle()), (tokens, h_kv, d), dtype)
        v = T.match_buffer(T.arg("v", T.handle()), (tokens, h_kv, d), dtype)
        slots = T.match_buffer(T.arg("slots", T.handle()), (tokens,), "int32")
        t, tx = T.env_thread("blockIdx.x"), T.env_thread("threadIdx.x")
        with T.launch_thread(t, tokens), T.launch_thread(tx, groups * cols):
            shared = (groups * cols,)
            amax = T.alloc_buffer(shared, "float32", scope="shared") if rows.packed else None
            c, group = tx % cols, tx // cols
            slot = T.bind(slots[t])
            page, offset = slot // page_size, slot % page_size
            with T.serial(0, (2 * h_kv + groups - 1) // groups) as step:
                r = step * groups + group
                rr = T.bind(T.min(r, 2 * h_kv - 1))  # the last step's extra threads read in range
                kv, head = rr // h_kv, rr % h_kv
                features = [c * n + b for b in range(n)]
                values = [T.bind(T.Select(kv == 0, k[t, head, f], v[t, head, f])) for f in features]
                values = [T.bind(x.astype("float32")) for x in values]
                top = None
                if amax is not None:
                    T.buffer_store(amax, magnitude(values), [tx])
                    T.evaluate(T.tvm_storage_sync("shared"))
                    top = row_max(amax, group * cols, cols)
                with T.If(tirx.all(r < 2 * h_kv, slot >= 0)), T.Then():
                    rows.store(pages, page, kv, head, offset, c, values, top)
                if amax is not None:  # the next step overwrites amax
                    T.evaluate(T.tvm_storage_sync("shared"))
    return ib.get()
