"""The gated delta rule's recurrent step on GPUs: one new token per sequence.

A workgroup per (sequence, v head, block of `cols` state columns); thread (r, j) holds rows r,
r + ROWS, ... of column j of the state in registers: read once, written once. The same math as
mlcx.kernels.hybrid.delta_cpu_decode, with q and k normalized by sums that meet in workgroup
memory: each thread sums its rows' k S, q S (per column) and k k, q q, q k (per row lane),
one barrier, then every thread adds the ROWS partial sums it needs.
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.gpu.config import KERNEL_ATTRS
from mlcx.kernels.hybrid.params import StepArrays, decay, param, shape_vars
from mlcx.kernels.hybrid.shapes import L2_EPS, DeltaShape

KERNEL_NAME = "delta_decode_gpu"
ROWS = 8  # row lanes of a workgroup (k_dim / ROWS state values per thread)
COLS = 32  # state columns of a workgroup


def delta_params(sh: DeltaShape):
    """(batch, qkv, g, beta, state, step arrays, o): the parameters of the CPU kernels, in
    their order (mlcx.kernels.hybrid.delta_cpu_parts)."""
    tokens, batch, slots = shape_vars()
    hv, dk, dv = sh.v_heads, sh.k_dim, sh.v_dim
    qkv = param("qkv", (tokens, sh.width), sh.dtype)
    g = param("g", (tokens, hv), "float32")
    beta = param("beta", (tokens, hv), "float32")
    state = param("state", (slots, hv, dk, dv), "float32")
    step = StepArrays.declare(batch, tokens)
    o = param("o", (tokens, hv, dv), sh.dtype)
    return batch, qkv, g, beta, state, step, o


def delta_decode_gpu(sh: DeltaShape) -> tirx.PrimFunc:
    dk, dv = sh.k_dim, sh.v_dim
    rows, cols = math.gcd(ROWS, dk), math.gcd(COLS, dv)
    per = dk // rows
    f32 = "float32"
    with IRBuilder() as ib, T.prim_func():
        T.func_name(KERNEL_NAME)
        T.func_attr(KERNEL_ATTRS)
        batch, qkv, g, beta, state, step, o = delta_params(sh)
        # no blockIdx.z: WebGPU reserves it for grids wider than 65535
        seq, by = T.env_thread("blockIdx.x"), T.env_thread("blockIdx.y")
        tx = T.env_thread("threadIdx.x")
        with (
            T.launch_thread(seq, batch),
            T.launch_thread(by, sh.v_heads * (dv // cols)),
            T.launch_thread(tx, rows * cols),
        ):
            head, block = by // (dv // cols), by % (dv // cols)
            j, r = tx % cols, tx // cols
            column = T.bind(block * cols + j)
            token, count = step.span(seq)
            slot = T.bind(step.state_slots[seq])
            fresh = T.bind(step.fresh(seq, token, count))
            regs = T.alloc_buffer((per,), f32, scope="local")
            sums = T.alloc_buffer((5,), f32, scope="local")  # kS, qS, kk, qq, qk
            parts = T.alloc_buffer((rows, cols, 2), f32, scope="shared")
            lanes = T.alloc_buffer((rows, 3), f32, scope="shared")
            for a in range(5):
                T.buffer_store(sums, T.float32(0.0), [a])
            for m in range(per):
                i = r + rows * m
                held = T.Select(fresh, T.float32(0.0), state[slot, head, i, column])
                T.buffer_store(regs, held, [m])
                q = T.bind(qkv[token, sh.q_offset(head) + i].astype(f32))
                k = T.bind(qkv[token, sh.k_offset(head) + i].astype(f32))
                for a, value in enumerate((k * regs[m], q * regs[m], k * k, q * q, q * k)):
                    T.buffer_store(sums, sums[a] + value, [a])
            T.buffer_store(parts, sums[0], [r, j, 0])
            T.buffer_store(parts, sums[1], [r, j, 1])
            with T.If(j == 0), T.Then():
                for a in range(3):
                    T.buffer_store(lanes, sums[2 + a], [r, a])
            T.evaluate(T.tvm_storage_sync("shared"))
            total = [_sum(parts, rows, (j, a)) for a in range(2)]
            kk, qq, qk = (_sum(lanes, rows, (a,)) for a in range(3))
            inv_k = T.bind(T.rsqrt(kk + T.float32(L2_EPS)))
            inv_q = T.bind(T.rsqrt(qq + T.float32(L2_EPS)) * T.float32(1.0 / math.sqrt(dk)))
            factor = T.bind(decay(g[token, head]))
            value = qkv[token, sh.v_offset(head) + column].astype(f32)
            delta = T.bind((value - factor * total[0] * inv_k) * beta[token, head])
            out = factor * total[1] * inv_q + delta * qk * inv_k * inv_q
            with T.If(r == 0), T.Then():
                T.buffer_store(o, out.astype(sh.dtype), [token, head, column])
            for m in range(per):
                i = r + rows * m
                k = qkv[token, sh.k_offset(head) + i].astype(f32) * inv_k
                T.buffer_store(state, factor * regs[m] + k * delta, [slot, head, i, column])
    return ib.get()


def _sum(buffer, rows: int, rest: tuple):
    total = buffer[(0, *rest)]
    for r in range(1, rows):
        total = total + buffer[(r, *rest)]
    return T.bind(total)
