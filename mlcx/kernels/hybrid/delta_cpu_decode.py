"""The gated delta rule's recurrent step on CPU: one new token per sequence.

Per (sequence, v head), with q and k L2-normalized and q scaled by 1/sqrt(k_dim):
  kv = S^T k, sq = S^T q (the old state), delta = (v - exp(g) kv) beta,
  S <- exp(g) S + k delta^T,  o = S^T q = exp(g) sq + delta (q . k).
Every column of S is independent, so a block of columns is read once for kv and sq (both in
one pass), then rewritten from L1: the state crosses memory once each way, the bound of this
step. Columns blocks are a few vector registers wide.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.hybrid.conv_cpu import vector_width
from mlcx.kernels.hybrid.delta_cpu_parts import DeltaBuffers, normalized_row, q_scale
from mlcx.kernels.hybrid.params import decay
from mlcx.kernels.hybrid.shapes import DeltaShape

KERNEL_NAME = "delta_decode_cpu"


def delta_decode_cpu(sh: DeltaShape, lanes: int = 8, registers: int = 16) -> tirx.PrimFunc:
    """The kernel for steps whose every sequence brings exactly one row."""
    dk, dv = sh.k_dim, sh.v_dim
    width = vector_width(dv, lanes)
    most = max(1, registers // 6)  # 2 accumulators a vector, its load, room for unrolling
    vectors = next(v for v in range(most, 0, -1) if (dv // width) % v == 0)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(KERNEL_NAME)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        bufs = DeltaBuffers.declare(sh)
        kw = vector_width(dk, lanes)
        with T.parallel(0, bufs.batch * sh.v_heads) as item:
            seq, head = item // sh.v_heads, item % sh.v_heads
            token, count = bufs.step.span(seq)
            base = T.bind(bufs.state_base(bufs.step.state_slots[seq], head))
            with T.If(bufs.step.fresh(seq, token, count)), T.Then():
                bufs.zero_state(base, vector_width(dk * dv, lanes))
            rows = T.alloc_buffer((2, dk), "float32")  # q, k
            normalized_row(bufs, token, sh.q_offset(head), kw, rows, 0, q_scale(sh))
            normalized_row(bufs, token, sh.k_offset(head), kw, rows, 1, 1.0)
            dot = rows[0, vec.ramp(0, kw)] * rows[1, vec.ramp(0, kw)]
            for c in range(1, dk // kw):
                dot = dot + rows[0, vec.ramp(c * kw, kw)] * rows[1, vec.ramp(c * kw, kw)]
            qk = T.bind(vec.hsum(T.bind(dot), kw))
            factor = T.bind(decay(bufs.g[token, head]))
            scalars = (token, head, base, qk, factor, bufs.beta[token, head])
            with T.serial(0, dv // (vectors * width)) as group:
                _columns(bufs, rows, scalars, group * vectors * width, (vectors, width))
    return ib.get()


def _columns(bufs: DeltaBuffers, rows, scalars, c0, tile) -> None:
    """The step for `vectors` column vectors of `width` from column c0."""
    sh = bufs.shape
    token, head, base, qk, factor, beta = scalars
    vectors, width = tile
    dv, state = sh.v_dim, bufs.state
    here = vec.ramp(0, width)
    # S^T k and S^T q; two buffers under TVM's 1 KiB stack limit, so that they live in registers
    kv, sq = (T.alloc_buffer((vectors, width), "float32") for _ in range(2))
    for v in range(vectors):
        for acc in (kv, sq):
            T.buffer_store(acc, vec.splat(vec.f32(0.0), width), [v, here])
    with T.serial(0, sh.k_dim) as i:
        q, k = T.bind(vec.splat(rows[0, i], width)), T.bind(vec.splat(rows[1, i], width))
        for v in range(vectors):
            column = T.bind(state[vec.ramp(base + i * dv + c0 + v * width, width)])
            T.buffer_store(kv, kv[v, here] + k * column, [v, here])
            T.buffer_store(sq, sq[v, here] + q * column, [v, here])
    e, b = vec.splat(factor, width), vec.splat(beta, width)
    deltas = []
    for v in range(vectors):
        c = c0 + v * width
        value = vec.to_f32(bufs.qkv[token, vec.ramp(sh.v_offset(head) + c, width)])
        delta = T.bind((value - e * kv[v, here]) * b)
        out = e * sq[v, here] + delta * vec.splat(qk, width)
        T.buffer_store(
            bufs.o, T.Cast(vec.vtype(sh.dtype, width), out), [token, head, vec.ramp(c, width)]
        )
        deltas.append(delta)
    with T.serial(0, sh.k_dim) as i:
        k = T.bind(vec.splat(rows[1, i], width))
        for v in range(vectors):
            at = vec.ramp(base + i * dv + c0 + v * width, width)
            T.buffer_store(state, e * state[at] + k * deltas[v], [at])
