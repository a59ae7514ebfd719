"""The gated delta rule over ragged runs of new tokens on CPU, in chunks of CHUNK tokens.

Per token (transformers' recurrence, q and k L2-normalized, q scaled by 1/sqrt(k_dim)):
S <- S * exp(g); delta = (v - S^T k) * beta; S <- S + k delta^T; o = S^T q.

A chunk of L tokens with cumulative log decays c_t (c_t = g_1 + ... + g_t within the chunk)
takes the WY/UT form, where every step is a product of small matrices:
  A[t, s] = beta_t (k_t . k_s) exp(c_t - c_s) for s < t       (strictly lower)
  U = (I + A)^-1 (beta v),  W = (I + A)^-1 (beta k exp(c))    (forward substitution)
  V = U - W S0                                                 (the corrections S0 misses)
  o_t = exp(c_t) q_t S0 + sum_{s <= t} (q_t . k_s) exp(c_t - c_s) V_s
  S1 = exp(c_L) S0 + sum_t exp(c_L - c_t) k_t V_t^T
with S0 the state before the chunk and S1 after it. A work item is (sequence, v head); its
chunk matrices are local scratch (L2-resident), the state is read and written in place.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.hybrid.conv_cpu import vector_width
from mlcx.kernels.hybrid.delta_cpu_parts import (
    Blocking,
    DeltaBuffers,
    Phase,
    normalized_row,
    product,
    q_scale,
)
from mlcx.kernels.hybrid.params import FLUSH, decay
from mlcx.kernels.hybrid.shapes import CHUNK, DeltaShape

KERNEL_NAME = "delta_prefill_cpu"
TILE_ROWS = 4


class _Chunk:
    """Scratch of one work item, reused by each chunk."""

    def __init__(self, sh: DeltaShape):
        dk, dv, n = sh.k_dim, sh.v_dim, CHUNK
        self.q = T.alloc_buffer((n, dk), "float32")  # normalized, scaled
        self.k = T.alloc_buffer((n, dk), "float32")  # normalized
        self.kt = T.alloc_buffer((dk, n), "float32")  # k transposed, later decayed to c_L
        self.a = T.alloc_buffer((n, n), "float32")
        self.p = T.alloc_buffer((n, n), "float32")  # decayed q . k, zero above the diagonal
        self.u = T.alloc_buffer((n, dv), "float32")  # U, then V
        self.w = T.alloc_buffer((n, dk), "float32")
        self.c = T.alloc_buffer((n,), "float32")  # cumulative log decay
        self.beta = T.alloc_buffer((n,), "float32")


def delta_prefill_cpu(sh: DeltaShape, lanes: int = 8, registers: int = 16) -> tirx.PrimFunc:
    """The chunked kernel for any step (any number of rows per sequence)."""
    with IRBuilder() as ib, T.prim_func():
        T.func_name(KERNEL_NAME)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        bufs = DeltaBuffers.declare(sh)
        with T.parallel(0, bufs.batch * sh.v_heads) as item:
            seq, head = item // sh.v_heads, item % sh.v_heads
            start, count = bufs.step.span(seq)
            base = T.bind(bufs.state_base(bufs.step.state_slots[seq], head))
            with T.If(bufs.step.fresh(seq, start, count)), T.Then():
                bufs.zero_state(base, vector_width(sh.k_dim * sh.v_dim, lanes))
            scratch = _Chunk(sh)
            with T.serial(0, (count + CHUNK - 1) // CHUNK) as chunk:
                first = T.bind(start + chunk * CHUNK)
                rows = T.bind(T.min(CHUNK, count - chunk * CHUNK))
                _chunk(bufs, scratch, (first, rows, head, base), (lanes, registers))
    return ib.get()


def _tiles(sh: DeltaShape, lanes: int, registers: int) -> tuple[Blocking, Blocking, Blocking]:
    """Tiles over v_dim, k_dim and chunk columns: rows x vectors accumulators fill a quarter to
    a half of the vector registers."""

    def tile(columns: int) -> Blocking:
        width = vector_width(columns, lanes)
        most = max(1, registers // (2 * TILE_ROWS))
        vectors = next(v for v in range(most, 0, -1) if (columns // width) % v == 0)
        return Blocking(TILE_ROWS, vectors, width)

    return tile(sh.v_dim), tile(sh.k_dim), tile(CHUNK)


def _chunk(bufs: DeltaBuffers, s: _Chunk, where, config) -> None:
    """One chunk of `rows` rows from `first`: its own matrices, then the state's products."""
    first, rows, head, base = where
    tv, tk, tc = _tiles(bufs.shape, *config)
    _rows(bufs, s, (first, rows, head), tk.width)
    _triangles(s, rows, tc)
    last = T.bind(s.c[rows - 1])
    with T.serial(0, bufs.shape.k_dim) as i, T.serial(0, rows) as t:  # k decayed to the end
        T.buffer_store(s.kt, s.kt[i, t] * decay(last - s.c[t]), [i, t])
    _solve(bufs, s, (first, rows, head), tv, tk)
    _with_state(bufs, s, where, tv, last)


def _rows(bufs: DeltaBuffers, s: _Chunk, where, width: int) -> None:
    """Normalized q and k rows, k transposed, cumulative decays, betas."""
    sh = bufs.shape
    first, rows, head = where
    with T.serial(0, rows) as t:
        token = first + t
        normalized_row(bufs, token, sh.q_offset(head), width, s.q, t, q_scale(sh))
        normalized_row(bufs, token, sh.k_offset(head), width, s.k, t, 1.0)
        before = T.Select(t > 0, s.c[T.max(t - 1, 0)], vec.f32(0.0))
        T.buffer_store(s.c, before + bufs.g[token, head], [t])
        T.buffer_store(s.beta, bufs.beta[token, head], [t])
    with T.serial(0, sh.k_dim) as i, T.serial(0, rows) as t:
        T.buffer_store(s.kt, s.k[t, i], [i, t])


def _with_state(bufs: DeltaBuffers, s: _Chunk, where, tv: Blocking, last) -> None:
    """V = U - W S0 (over U); o = exp(c) q S0 + P V; S1 = exp(c_L) S0 + (decayed k)^T V."""
    sh = bufs.shape
    first, rows, head, base = where
    dk, dv, w = sh.k_dim, sh.v_dim, tv.width
    state = bufs.state

    def s0(i, c):
        return state[vec.ramp(base + i * dv + c, w)]

    def v_row(t, c):
        return s.u[t, vec.ramp(c, w)]

    def store_v(t, c, acc):
        T.buffer_store(s.u, acc, [t, vec.ramp(c, w)])

    product(rows, dv, tv, v_row, [Phase(dk, lambda t, i: -s.w[t, i], s0)], store_v)

    def store_o(t, c, acc):
        with T.If(t < rows), T.Then():
            value = T.Cast(vec.vtype(sh.dtype, w), acc)
            T.buffer_store(bufs.o, value, [first + t, head, vec.ramp(c, w)])

    zero = vec.splat(vec.f32(0.0), w)
    phases = [
        Phase(dk, lambda t, i: s.q[t, i], s0),
        Phase(rows, lambda t, j: s.p[t, j], v_row, lambda t: decay(s.c[t])),
    ]
    product(rows, dv, tv, lambda t, c: zero, phases, store_o)

    end = T.bind(vec.splat(decay(last), w))

    def store_s(i, c, acc):
        T.buffer_store(state, acc, [vec.ramp(base + i * dv + c, w)])

    phase = Phase(rows, lambda i, t: s.kt[i, t], v_row)
    product(dk, dv, tv, lambda i, c: s0(i, c) * end, [phase], store_s)


def _triangles(s: _Chunk, rows, tile: Blocking) -> None:
    """A (strictly lower; the solve reads no more) and P (lower with the diagonal, zero above
    it: the output sums over whole rows of it) from k k^T and q k^T and the decays."""
    w = tile.width
    one = vec.splat(vec.f32(1.0), w)
    zero = vec.splat(vec.f32(0.0), w)

    def decayed(t, c, value):
        gap = vec.splat(s.c[t], w) - s.c[vec.ramp(c, w)]
        return value * decay(T.min(gap, zero), w)

    def store_a(t, c, acc):
        value = decayed(t, c, acc) * vec.splat(s.beta[t], w)
        T.buffer_store(s.a, value, [t, vec.ramp(c, w)])

    def store_p(t, c, acc):
        seen = T.Select(vec.ramp(c, w) <= vec.splat(t, w), one, zero)
        T.buffer_store(s.p, decayed(t, c, acc) * seen, [t, vec.ramp(c, w)])

    for left, store in ((s.k, store_a), (s.q, store_p)):
        product(
            rows,
            CHUNK,
            tile,
            lambda t, c: zero,
            [Phase(s.kt.shape[0], lambda t, i, left=left: left[t, i], _kt_row(s, w))],
            store,
        )


def _kt_row(s: _Chunk, w: int):
    return lambda i, c: s.kt[i, vec.ramp(c, w)]


def _solve(bufs: DeltaBuffers, s: _Chunk, where, tv: Blocking, tk: Blocking) -> None:
    """Forward substitution, row by row: U_t = beta_t v_t - sum_{j<t} A[t, j] U_j, and W alike
    from beta_t k_t exp(c_t). W_t is exp(c_t) times a bounded sum, so a row whose decay is
    flushed stays 0: its terms (each decays of up to 2 FLUSH) would only underflow."""
    sh = bufs.shape
    first, rows, head = where
    with T.serial(0, rows) as t:
        token = first + t
        beta = T.bind(s.beta[t])
        decayed = T.bind(beta * decay(s.c[t]))
        v_at = sh.v_offset(head)
        w_terms = T.Select(s.c[t] > vec.f32(FLUSH), t, 0)
        for out, tile, init, terms in (
            (s.u, tv, lambda c, w: vec.to_f32(bufs.qkv[token, vec.ramp(v_at + c, w)]) * beta, t),
            (s.w, tk, lambda c, w: s.k[t, vec.ramp(c, w)] * decayed, w_terms),
        ):
            _substitute(s, out, tile, (t, terms), init)


def _substitute(s: _Chunk, out, tile: Blocking, row, init) -> None:
    """out[t] = init - sum_{j < terms} A[t, j] out[j]."""
    t, terms = row
    w = tile.width
    with T.serial(0, out.shape[1] // tile.columns) as group:
        acc = T.alloc_buffer((tile.vectors, w), "float32")
        cs = [T.bind(group * tile.columns + v * w) for v in range(tile.vectors)]
        for v, c in enumerate(cs):
            T.buffer_store(acc, init(c, w), [v, vec.ramp(0, w)])
        with T.serial(0, terms) as j:
            a = T.bind(vec.splat(s.a[t, j], w))
            for v, c in enumerate(cs):
                value = acc[v, vec.ramp(0, w)] - a * out[j, vec.ramp(c, w)]
                T.buffer_store(acc, value, [v, vec.ramp(0, w)])
        for v, c in enumerate(cs):
            T.buffer_store(out, acc[v, vec.ramp(0, w)], [t, vec.ramp(c, w)])
