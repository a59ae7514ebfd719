"""The gated delta rule's prefill on GPUs, part one: what each chunk needs from its own tokens
(the WY/UT form of mlcx.kernels.hybrid.delta_cpu_prefill), for every chunk of every sequence
at once. Part two (delta_gpu_scan) carries the state through the chunks.

- `delta_chunks_gpu` (a workgroup per (chunk, v head), thread (t, quarter) for row t and a
  quarter of the columns): L2 norms, cumulative log decays c, and the rows of
  A[t, s] = beta_t (k_t . k_s) exp(c_t - c_s) (s < t) and P[t, s] = (q_t . k_s) exp(c_t - c_s)
  (s <= t), from q and k tiles of TILE features staged in workgroup memory;
- `delta_solve_gpu` (a workgroup per (chunk, v head), a thread per column of [v | k]): the
  forward substitution U = (I + A)^-1 beta v, W = (I + A)^-1 beta k exp(c), one column per
  thread, so no barrier.

Scratch, per token row and v head: rows [tokens, v_heads, 3] = (c, 1 / |q| / sqrt(k_dim),
1 / |k|); a and p [tokens, v_heads, CHUNK]; u [tokens, v_heads, v_dim + k_dim] = (U | W).
Chunks are numbered over the batch (chunk_count_bound of them at most); a workgroup past the
last chunk computes on clamped rows and stores nothing.
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.hybrid.params import FLUSH, decay, param
from mlcx.kernels.hybrid.shapes import CHUNK, L2_EPS, DeltaShape

TILE = 16  # features of q and k staged at once (2 x TILE x CHUNK floats of workgroup memory)
QUARTERS = 4  # column quarters of a row: CHUNK / QUARTERS products per thread and matrix
SOLVE_THREADS = 256
F32 = "float32"


def chunk_count_bound(tokens, batch):
    """At least the number of CHUNK-token chunks of any batch of `tokens` rows."""
    return tokens // CHUNK + batch


def chunk_at(q_indptr, batch, z):
    """(first row, rows) of chunk z of the batch, bound; rows is 0 past the last chunk."""
    found = T.alloc_buffer((3,), "int32", scope="local")  # chunks before, first row, rows
    for a in range(3):
        T.buffer_store(found, 0, [a])
    with T.serial(0, batch) as s:
        start, end = q_indptr[s], q_indptr[s + 1]
        n = T.bind((end - start + CHUNK - 1) // CHUNK)
        local = T.bind(z - found[0])
        here = tirx.all(local >= 0, local < n)
        first = start + local * CHUNK
        T.buffer_store(found, T.Select(here, first, found[1]), [1])
        T.buffer_store(found, T.Select(here, T.min(CHUNK, end - first), found[2]), [2])
        T.buffer_store(found, found[0] + n, [0])
    return T.bind(found[1]), T.bind(found[2])


def scratch_params(sh: DeltaShape, tokens):
    hv = sh.v_heads
    return {
        "rows": ("rows", (tokens, hv, 3)),
        "a": ("a", (tokens, hv, CHUNK)),
        "p": ("p", (tokens, hv, CHUNK)),
        "u": ("u", (tokens, hv, sh.v_dim + sh.k_dim)),
    }


def _scratch(sh: DeltaShape, tokens, *names):
    spec = scratch_params(sh, tokens)
    return [param(spec[n][0], spec[n][1], F32) for n in names]


def delta_chunks_gpu(sh: DeltaShape) -> tirx.PrimFunc:
    """(qkv, g, beta, q_indptr) -> rows, a, p."""
    tile = math.gcd(TILE, sh.k_dim)
    threads = CHUNK * QUARTERS
    per = CHUNK // QUARTERS
    with IRBuilder() as ib, T.prim_func():
        T.func_name("delta_chunks_gpu")
        T.func_attr(KERNEL_ATTRS)
        tokens, bounds = tirx.Var("tokens", "int64"), tirx.Var("batch_plus_one", "int64")
        qkv = param("qkv", (tokens, sh.width), sh.dtype)
        g = param("g", (tokens, sh.v_heads), F32)
        beta = param("beta", (tokens, sh.v_heads), F32)
        q_indptr = param("q_indptr", (bounds,), "int32")
        batch = bounds - 1  # (q_indptr alone gives the batch, not its own shape)
        rows_out, a_out, p_out = _scratch(sh, tokens, "rows", "a", "p")
        z, head, tx = (T.env_thread(n) for n in ("blockIdx.x", "blockIdx.y", "threadIdx.x"))
        with (
            T.launch_thread(z, chunk_count_bound(tokens, batch)),
            T.launch_thread(head, sh.v_heads),
            T.launch_thread(tx, threads),
        ):
            first, rows = chunk_at(q_indptr, batch, z)
            t, quarter = tx % CHUNK, tx // CHUNK
            last = T.Cast("int32", tokens) - 1

            def row(s):
                return T.max(T.min(first + T.min(s, rows - 1), last), 0)

            kt = T.alloc_buffer((tile, CHUNK), F32, scope="shared")
            qt = T.alloc_buffer((tile, CHUNK), F32, scope="shared")
            acc = T.alloc_buffer((2 * per + 2,), F32, scope="local")  # k.k, q.k, |k|^2, |q|^2
            for a in range(2 * per + 2):
                T.buffer_store(acc, T.float32(0.0), [a])
            with T.serial(0, sh.k_dim // tile) as step:
                T.evaluate(T.tvm_storage_sync("shared"))
                for m in range(tile * CHUNK // threads):
                    e = tx + threads * m
                    s, f = e // tile, e % tile
                    for buf, at in ((kt, sh.k_offset(head)), (qt, sh.q_offset(head))):
                        value = qkv[row(s), at + step * tile + f].astype(F32)
                        T.buffer_store(buf, T.Select(s < rows, value, T.float32(0.0)), [f, s])
                T.evaluate(T.tvm_storage_sync("shared"))
                _products(kt, qt, acc, (t, quarter), tile, per)
            norms = T.alloc_buffer((3, CHUNK), F32, scope="shared")  # c, 1/|q| scaled, 1/|k|
            _row_scalars(sh, norms, acc, per, (t, quarter, head), (g, row, rows))
            T.evaluate(T.tvm_storage_sync("shared"))
            with T.If(t < rows), T.Then():
                out = (rows_out, a_out, p_out)
                _store(out, norms, acc, (first, t, quarter, head), (beta, per))
    return ib.get()


def _store(out, norms, acc, where, more) -> None:
    """Row t's scalars (the first quarter's threads) and its quarter of the rows of A and P."""
    rows_out, a_out, p_out = out
    first, t, quarter, head = where
    beta, per = more
    zero = T.float32(0.0)
    with T.If(quarter == 0), T.Then():
        for a in range(3):
            T.buffer_store(rows_out, norms[a, t], [first + t, head, a])
    for m in range(per):
        s = quarter * per + m
        weight = decay(T.min(norms[0, t] - norms[0, s], zero))
        scale = T.bind(norms[2, s] * weight)
        a_value = acc[m] * norms[2, t] * beta[first + t, head] * scale
        T.buffer_store(a_out, T.Select(s < t, a_value, zero), [first + t, head, s])
        p_value = acc[per + m] * norms[1, t] * scale
        T.buffer_store(p_out, T.Select(s <= t, p_value, zero), [first + t, head, s])


def _products(kt, qt, acc, lane, tile: int, per: int) -> None:
    """This thread's k_t . k_s and q_t . k_s for its quarter's columns s over one tile, and
    |k_t|^2 and |q_t|^2 (the first quarter's are the ones kept)."""
    t, quarter = lane
    with T.serial(0, tile) as f:
        k, q = T.bind(kt[f, t]), T.bind(qt[f, t])
        for m in range(per):
            other = T.bind(kt[f, quarter * per + m])
            T.buffer_store(acc, acc[m] + k * other, [m])
            T.buffer_store(acc, acc[per + m] + q * other, [per + m])
        T.buffer_store(acc, acc[2 * per] + k * k, [2 * per])
        T.buffer_store(acc, acc[2 * per + 1] + q * q, [2 * per + 1])


def _row_scalars(sh: DeltaShape, norms, acc, per: int, lane, inputs) -> None:
    """norms[:, t] = (c_t, scaled 1 / |q_t|, 1 / |k_t|): the first quarter's threads write the
    norms, the second's sum the log decays."""
    t, quarter, head = lane
    g, row, rows = inputs
    eps = T.float32(L2_EPS)
    with T.If(quarter == 0), T.Then():
        scale = T.float32(1.0 / math.sqrt(sh.k_dim))
        T.buffer_store(norms, T.rsqrt(acc[2 * per + 1] + eps) * scale, [1, t])
        T.buffer_store(norms, T.rsqrt(acc[2 * per] + eps), [2, t])
    with T.If(quarter == 1), T.Then():
        total = T.alloc_buffer((1,), F32, scope="local")
        T.buffer_store(total, T.float32(0.0), [0])
        with T.serial(0, T.min(t + 1, rows)) as s:
            T.buffer_store(total, total[0] + g[row(s), head], [0])
        T.buffer_store(norms, total[0], [0, t])


def delta_solve_gpu(sh: DeltaShape) -> tirx.PrimFunc:
    """(qkv, beta, q_indptr, rows, a) -> u."""
    dv, dk = sh.v_dim, sh.k_dim
    columns = dv + dk
    with IRBuilder() as ib, T.prim_func():
        T.func_name("delta_solve_gpu")
        T.func_attr(KERNEL_ATTRS)
        tokens, bounds = tirx.Var("tokens", "int64"), tirx.Var("batch_plus_one", "int64")
        qkv = param("qkv", (tokens, sh.width), sh.dtype)
        beta = param("beta", (tokens, sh.v_heads), F32)
        q_indptr = param("q_indptr", (bounds,), "int32")
        batch = bounds - 1  # (q_indptr alone gives the batch, not its own shape)
        rows_in, a_in, u = _scratch(sh, tokens, "rows", "a", "u")
        z, head, tx = (T.env_thread(n) for n in ("blockIdx.x", "blockIdx.y", "threadIdx.x"))
        threads = min(SOLVE_THREADS, columns)
        with (
            T.launch_thread(z, chunk_count_bound(tokens, batch)),
            T.launch_thread(head, sh.v_heads),
            T.launch_thread(tx, threads),
        ):
            first, rows = chunk_at(q_indptr, batch, z)
            with T.serial(0, (columns + threads - 1) // threads) as group:
                j = T.bind(group * threads + tx)
                jj = T.bind(T.min(j, columns - 1))
                with T.If(j < columns), T.Then(), T.serial(0, rows) as t:
                    token = first + t
                    v = qkv[token, sh.v_offset(head) + T.min(jj, dv - 1)].astype(F32)
                    k = qkv[token, sh.k_offset(head) + T.max(jj - dv, 0)].astype(F32)
                    k = k * rows_in[token, head, 2] * decay(rows_in[token, head, 0])
                    acc = T.alloc_buffer((1,), F32, scope="local")
                    T.buffer_store(acc, T.Select(jj < dv, v, k) * beta[token, head], [0])
                    # a W row whose decay is flushed stays 0 (delta_cpu_prefill._solve)
                    flushed = tirx.all(jj >= dv, rows_in[token, head, 0] <= T.float32(FLUSH))
                    with T.serial(0, T.Select(flushed, 0, t)) as s:
                        update = acc[0] - a_in[token, head, s] * u[first + s, head, jj]
                        T.buffer_store(acc, update, [0])
                    T.buffer_store(u, acc[0], [token, head, jj])
    return ib.get()
