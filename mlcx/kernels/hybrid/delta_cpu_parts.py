"""Pieces of the CPU gated delta rule kernels: their parameters, the L2-normalized q/k rows, and
a register-blocked product of local matrices.

Parameters, in order: qkv [tokens, width] (the convolution's packed output, `dtype`), g
[tokens, v_heads] (log decay, float32), beta [tokens, v_heads] (float32), state [slots,
v_heads, k_dim, v_dim] (float32, in place), state_slots, q_indptr, positions, then the output
o [tokens, v_heads, v_dim] (`dtype`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.hybrid.params import StepArrays, param, shape_vars
from mlcx.kernels.hybrid.shapes import L2_EPS, DeltaShape


@dataclass(frozen=True)
class DeltaBuffers:
    shape: DeltaShape
    qkv: tirx.Buffer
    g: tirx.Buffer
    beta: tirx.Buffer
    state: tirx.Buffer  # flat float32 view
    step: StepArrays
    o: tirx.Buffer
    batch: tirx.Var

    @staticmethod
    def declare(shape: DeltaShape) -> DeltaBuffers:
        tokens, batch, slots = shape_vars()
        hv, dk, dv = shape.v_heads, shape.k_dim, shape.v_dim
        qkv = param("qkv", (tokens, shape.width), shape.dtype)
        g = param("g", (tokens, hv), "float32")
        beta = param("beta", (tokens, hv), "float32")
        state = param("state", (slots, hv, dk, dv), "float32")
        step = StepArrays.declare(batch, tokens)
        o = param("o", (tokens, hv, dv), shape.dtype)
        flat = T.decl_buffer((slots * hv * dk * dv,), "float32", data=state.data)
        return DeltaBuffers(shape, qkv, g, beta, flat, step, o, batch)

    def state_base(self, slot, head):
        """Index of S[0, 0] of (slot, v head) in the flat state."""
        sh = self.shape
        return (T.Cast("int64", slot) * sh.v_heads + head) * (sh.k_dim * sh.v_dim)

    def zero_state(self, base, width: int) -> None:
        zero = vec.splat(vec.f32(0.0), width)
        size = self.shape.k_dim * self.shape.v_dim
        with T.serial(0, size // width) as e:
            T.buffer_store(self.state, zero, [vec.ramp(base + e * width, width)])


def normalized_row(bufs: DeltaBuffers, token, offset, width: int, dest, row, scale: float):
    """dest[row, :] = x / sqrt(sum(x^2) + eps) * scale for the k_dim features of qkv[token]
    from `offset` (float32, vectors of `width`)."""
    dk = bufs.shape.k_dim
    parts = [
        T.bind(vec.to_f32(bufs.qkv[token, vec.ramp(offset + c * width, width)]))
        for c in range(dk // width)
    ]
    squares = parts[0] * parts[0]
    for p in parts[1:]:
        squares = squares + p * p
    total = vec.hsum(squares, width) if width > 1 else squares
    inv = T.bind(T.rsqrt(total + vec.f32(L2_EPS)) * vec.f32(scale))
    for c, p in enumerate(parts):
        T.buffer_store(dest, p * vec.splat(inv, width), [row, vec.ramp(c * width, width)])


def q_scale(shape: DeltaShape) -> float:
    return 1.0 / math.sqrt(shape.k_dim)


@dataclass(frozen=True)
class Phase:
    """acc[t, :] += sum_{i < extent} a(t, i) * b(i, column vector) (after multiplying acc's row
    t by `rescale(t)` when given)."""

    extent: object
    a: Callable
    b: Callable
    rescale: Callable | None = None


@dataclass(frozen=True)
class Blocking:
    """Register tile of a product: `rows` rows by `vectors` vectors of `width` lanes."""

    rows: int
    vectors: int
    width: int

    @property
    def columns(self) -> int:
        return self.vectors * self.width


def product(m, columns: int, tile: Blocking, init: Callable, phases, store: Callable) -> None:
    """For rows t < m (in tiles; a last tile's extra rows are computed from whatever their
    inputs hold and must be dropped by `store` or land in scratch) and every column vector:
    acc = init(t, c); the phases; store(t, c, acc). `c` is the first column of the vector."""
    rows, vectors, width = tile.rows, tile.vectors, tile.width
    with (
        T.serial(0, (m + rows - 1) // rows) as block,
        T.serial(0, columns // tile.columns) as group,
    ):
        # a buffer per row: each stays under TVM's 1 KiB stack limit (larger ones become heap
        # workspace, which LLVM cannot keep in registers)
        accs = [T.alloc_buffer((vectors, width), "float32") for _ in range(rows)]
        ts = [T.bind(block * rows + r) for r in range(rows)]
        cs = [T.bind(group * tile.columns + v * width) for v in range(vectors)]
        here = vec.ramp(0, width)
        for r, acc in enumerate(accs):
            for v in range(vectors):
                T.buffer_store(acc, init(ts[r], cs[v]), [v, here])
        for phase in phases:
            if phase.rescale is not None:
                for r, acc in enumerate(accs):
                    factor = T.bind(vec.splat(phase.rescale(ts[r]), width))
                    for v in range(vectors):
                        T.buffer_store(acc, acc[v, here] * factor, [v, here])
            with T.serial(0, phase.extent) as i:
                bs = [T.bind(phase.b(i, cs[v])) for v in range(vectors)]
                for r, acc in enumerate(accs):
                    a = T.bind(vec.splat(phase.a(ts[r], i), width))
                    for v in range(vectors):
                        T.buffer_store(acc, acc[v, here] + a * bs[v], [v, here])
        for r, acc in enumerate(accs):
            for v in range(vectors):
                store(ts[r], cs[v], acc[v, here])
