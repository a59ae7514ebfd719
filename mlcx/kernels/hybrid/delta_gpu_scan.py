"""The gated delta rule's prefill on GPUs, part two: the state through a sequence's chunks.

A workgroup per (sequence, v head, block of `cols` state columns): the columns of the state
are independent, so the block S[:, cols] lives in workgroup memory for the whole sequence
(read from the state once, written back once) and each chunk takes three barriers:
  V = U - W S                                   (thread (row group, column): CHUNK / groups rows)
  o_t = exp(c_t) q_t S + sum_s P[t, s] V_s        (the same rows)
  S <- exp(c_L) S + sum_t exp(c_L - c_t) k_t V_t^T  (each thread its own elements of S)
with U, W, P and the row scalars from delta_gpu_chunks. The columns per workgroup keep S and V
within 12 KiB of workgroup memory (WebGPU guarantees 16).
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.hybrid.delta_gpu_chunks import F32, scratch_params
from mlcx.kernels.hybrid.params import StepArrays, decay, param, shape_vars
from mlcx.kernels.hybrid.shapes import CHUNK, DeltaShape

THREADS = 256
SHARED_BYTES = 12 * 1024


def scan_columns(sh: DeltaShape) -> int:
    """State columns of a workgroup: the widest of 32, 16, 8, 4 that divides v_dim and fits."""
    for cols in (32, 16, 8, 4):
        if sh.v_dim % cols == 0 and (sh.k_dim + CHUNK) * cols * 4 <= SHARED_BYTES:
            return cols
    raise ValueError(f"k_dim {sh.k_dim} is too large for the GPU delta rule's workgroup memory")


def delta_scan_gpu(sh: DeltaShape) -> tirx.PrimFunc:
    """(qkv, rows, p, u, state in place, state_slots, q_indptr, positions) -> o."""
    dk, dv = sh.k_dim, sh.v_dim
    cols = scan_columns(sh)
    groups = THREADS // cols
    blocks = dv // cols
    with IRBuilder() as ib, T.prim_func():
        T.func_name("delta_scan_gpu")
        T.func_attr(KERNEL_ATTRS)
        tokens, batch, slots = shape_vars()
        qkv = param("qkv", (tokens, sh.width), sh.dtype)
        spec = scratch_params(sh, tokens)
        rows_in, p_in, u_in = (param(*spec[n], F32) for n in ("rows", "p", "u"))
        state = param("state", (slots, sh.v_heads, dk, dv), F32)
        step = StepArrays.declare(batch, tokens)
        o = param("o", (tokens, sh.v_heads, dv), sh.dtype)
        seq, by, tx = (T.env_thread(n) for n in ("blockIdx.x", "blockIdx.y", "threadIdx.x"))
        with (
            T.launch_thread(seq, batch),
            T.launch_thread(by, sh.v_heads * blocks),
            T.launch_thread(tx, THREADS),
        ):
            head, col0 = by // blocks, by % blocks * cols
            j, group = tx % cols, tx // cols
            start, count = step.span(seq)
            slot = T.bind(step.state_slots[seq])
            fresh = T.bind(step.fresh(seq, start, count))
            s_sh = T.alloc_buffer((dk, cols), F32, scope="shared")
            v_sh = T.alloc_buffer((CHUNK, cols), F32, scope="shared")
            kd = T.alloc_buffer((CHUNK,), F32, scope="shared")  # 1/|k_t| exp(c_L - c_t)

            def own(body) -> None:
                """body(i, c) for this thread's elements of the state block."""
                for m in range((dk * cols + THREADS - 1) // THREADS):
                    e = tx + THREADS * m
                    with T.If(e < dk * cols), T.Then():
                        body(e // cols, e % cols)

            def load(i, c):
                held = state[slot, head, i, col0 + c]
                T.buffer_store(s_sh, T.Select(fresh, T.float32(0.0), held), [i, c])

            own(load)
            bufs = (qkv, rows_in, p_in, u_in, o, s_sh, v_sh, kd)
            with T.serial(0, (count + CHUNK - 1) // CHUNK) as chunk:
                first = T.bind(start + chunk * CHUNK)
                rows = T.bind(T.min(CHUNK, count - chunk * CHUNK))
                where = (first, rows, head, col0, j, group, groups)
                _chunk(sh, bufs, where, own)

            def store(i, c):
                T.buffer_store(state, s_sh[i, c], [slot, head, i, col0 + c])

            T.evaluate(T.tvm_storage_sync("shared"))
            with T.If(count > 0), T.Then():
                own(store)
    return ib.get()


def _chunk(sh: DeltaShape, bufs, where, own) -> None:
    qkv, rows_in, p_in, u_in, o, s_sh, v_sh, kd = bufs
    first, rows, head, col0, j, group, groups = where
    dk, dv = sh.k_dim, sh.v_dim
    last = T.bind(first + rows - 1)
    sync = lambda: T.evaluate(T.tvm_storage_sync("shared"))  # noqa: E731
    acc = T.alloc_buffer((1,), F32, scope="local")
    sync()
    for m in range(CHUNK // groups):  # V = U - W S
        t = group + groups * m
        token = T.bind(T.min(first + t, last))
        T.buffer_store(acc, u_in[token, head, col0 + j], [0])
        with T.serial(0, dk) as i:
            T.buffer_store(acc, acc[0] - u_in[token, head, dv + i] * s_sh[i, j], [0])
        T.buffer_store(v_sh, T.Select(t < rows, acc[0], T.float32(0.0)), [t, j])
    end = T.bind(rows_in[last, head, 0])
    sync()
    for m in range(CHUNK // groups):  # o = exp(c) q S + P V
        t = group + groups * m
        token = T.bind(T.min(first + t, last))
        T.buffer_store(acc, T.float32(0.0), [0])
        with T.serial(0, dk) as i:
            q = qkv[token, sh.q_offset(head) + i].astype(F32)
            T.buffer_store(acc, acc[0] + q * s_sh[i, j], [0])
        scale = rows_in[token, head, 1] * decay(rows_in[token, head, 0])
        T.buffer_store(acc, acc[0] * scale, [0])
        with T.serial(0, rows) as s:
            T.buffer_store(acc, acc[0] + p_in[token, head, s] * v_sh[s, j], [0])
        with T.If(t < rows), T.Then():
            T.buffer_store(o, acc[0].astype(sh.dtype), [token, head, col0 + j])
        with T.If(j == 0), T.Then():
            weight = rows_in[token, head, 2] * decay(end - rows_in[token, head, 0])
            T.buffer_store(kd, weight, [t])
    sync()

    def update(i, c):
        total = T.alloc_buffer((1,), F32, scope="local")
        T.buffer_store(total, s_sh[i, c] * decay(end), [0])
        with T.serial(0, rows) as t:
            token = first + t
            k = qkv[token, sh.k_offset(head) + i].astype(F32) * kd[t]
            T.buffer_store(total, total[0] + k * v_sh[t, c], [0])
        T.buffer_store(s_sh, total[0], [i, c])

    own(update)
