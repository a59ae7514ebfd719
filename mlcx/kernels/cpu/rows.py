"""Where a linear kernel's input rows come from, and how they are quantized to int16.

A linear kernel reads its activations through a row source, so the RMSNorm or SwiGLU that
produced them in the graph runs inside the kernel (fused prologue) instead of as a kernel of
its own. Each source yields a row 32 features at a time as float32 x 32.

int16 activations (one scale per 32 features) keep the greedy tokens of the float model;
int8 activations, as llama.cpp uses, change them within a few tokens on SmolLM2-135M, so
they serve only where the int8 kernels were asked for (LinearKernels.INT8: long prefills).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.kernels.moe_options import SILU, GluActivation

Buffers = dict[str, tirx.Buffer]
INT16_MAX = 32767.0
CODES = {16: ("int16", INT16_MAX), 8: ("int8", 127.0)}  # bits -> (code dtype, largest code)


@dataclass(frozen=True)
class PlainRows:
    """x [tokens, K] as it is."""

    features: int

    def inputs(self, tokens) -> list[tuple[str, tuple, str]]:
        return [("x", (tokens, self.features), "float32")]

    def setup(self, bufs: Buffers, t):
        return None

    def chunk(self, bufs: Buffers, t, c, state) -> tirx.PrimExpr:
        return bufs["x"][t, vec.ramp(c * CHUNK, CHUNK)]


@dataclass(frozen=True)
class RmsNormRows:
    """rms_norm(x [tokens, K], weight [K]) = x / sqrt(mean(x^2) + eps) * weight."""

    features: int
    eps: float

    def inputs(self, tokens) -> list[tuple[str, tuple, str]]:
        return [("x", (tokens, self.features), "float32"), ("norm", (self.features,), "float32")]

    def setup(self, bufs: Buffers, t):
        acc = T.alloc_buffer((CHUNK,), "float32")
        T.buffer_store(acc, vec.splat(vec.f32(0.0), CHUNK), [vec.ramp(0, CHUNK)])
        with T.serial(0, self.features // CHUNK) as c:
            v = T.bind(bufs["x"][t, vec.ramp(c * CHUNK, CHUNK)])
            T.buffer_store(acc, acc[vec.ramp(0, CHUNK)] + v * v, [vec.ramp(0, CHUNK)])
        mean = vec.hsum(acc[vec.ramp(0, CHUNK)], CHUNK) / vec.f32(self.features)
        return T.bind(T.rsqrt(mean + vec.f32(self.eps)))

    def chunk(self, bufs: Buffers, t, c, state) -> tirx.PrimExpr:
        x = bufs["x"][t, vec.ramp(c * CHUNK, CHUNK)]
        return x * vec.splat(state, CHUNK) * bufs["norm"][vec.ramp(c * CHUNK, CHUNK)]


@dataclass(frozen=True)
class SwiGluRows:
    """silu(gate) * up for gate_up [tokens, 2K] (gate first, as the graph splits it), or
    another gated activation `glu` of the two (gpt-oss's clamped one)."""

    features: int
    glu: GluActivation = SILU

    def inputs(self, tokens) -> list[tuple[str, tuple, str]]:
        return [("gate_up", (tokens, 2 * self.features), "float32")]

    def setup(self, bufs: Buffers, t):
        return None

    def chunk(self, bufs: Buffers, t, c, state) -> tirx.PrimExpr:
        gate = bufs["gate_up"][t, vec.ramp(c * CHUNK, CHUNK)]
        up = bufs["gate_up"][t, vec.ramp(self.features + c * CHUNK, CHUNK)]
        if self.glu.plain:
            return vec.silu(gate, CHUNK) * up
        const = lambda v: vec.splat(vec.f32(v), CHUNK)  # noqa: E731
        return self.glu.apply(T.bind(gate), up, lambda v: vec.exp(v, CHUNK), const)


RowSource = PlainRows | RmsNormRows | SwiGluRows


@dataclass(frozen=True)
class QuantizedRows:
    """Scratch for int16 or int8 rows: codes [rows, K], scale and sum per chunk [rows, K/32];
    int8 rows also keep the sum of each half chunk [rows, K/16] (for Q6_K's scales per 16), and
    int16 rows where asked (`halves`: Q2_K's minimums per 16)."""

    codes: tirx.Buffer
    scales: tirx.Buffer
    sums: tirx.Buffer
    halves: tirx.Buffer | None = None

    def scaled_dots(self, dots, weight_scales, weight_offsets, row, chunk, lanes: int, half=None):
        """float32 x lanes: int32 dot products of `chunk` (or of its `half`) against input
        row `row`, times the weights' scales and this row's chunk scale, plus the weights'
        offsets (None: none) times the sum of the chunk (or half)."""
        value = T.Cast(f"float32x{lanes}", dots) * weight_scales
        value = value * vec.splat(self.scales[row, chunk], lanes)
        if weight_offsets is not None:
            total = self.sums[row, chunk] if half is None else self.halves[row, 2 * chunk + half]
            value = value + weight_offsets * vec.splat(total, lanes)
        return value

    @property
    def bits(self) -> int:
        return 8 if self.codes.dtype == "int8" else 16

    @staticmethod
    def alloc(rows, features: int, bits: int = 16, halves: bool = False) -> QuantizedRows:
        chunks = features // CHUNK
        return QuantizedRows(
            T.alloc_buffer((rows, features), CODES[bits][0]),
            T.alloc_buffer((rows, chunks), "float32"),
            T.alloc_buffer((rows, chunks), "float32"),
            T.alloc_buffer((rows, 2 * chunks), "float32") if bits == 8 or halves else None,
        )


def quantize_row(source: RowSource, bufs: Buffers, t, dest: QuantizedRows, row, order) -> None:
    """Quantize input row t into dest row `row`, chunk lanes in `order`."""
    dtype, top = CODES[dest.bits]
    state = source.setup(bufs, t)
    with T.serial(0, source.features // CHUNK) as c:
        v = T.bind(source.chunk(bufs, t, c, state))
        amax = T.bind(vec.hmax(T.fabs(v), CHUNK))
        inv = T.bind(T.Select(amax > vec.f32(0.0), vec.f32(top) / amax, vec.f32(0.0)))
        rounded = T.bind(T.round(T.Shuffle([v], order) * vec.splat(inv, CHUNK)))
        T.buffer_store(
            dest.codes, T.Cast(f"{dtype}x32", rounded), [row, vec.ramp(c * CHUNK, CHUNK)]
        )
        scale = T.bind(amax * vec.f32(1.0 / top))
        T.buffer_store(dest.scales, scale, [row, c])
        # The weights' offsets multiply the sum of what the dot products saw: the rounded codes
        # (for int8 the rounding would otherwise meet unbalanced 0..15 codes: twice the error).
        if dest.bits == 8:
            low, high = vec.halves(rounded, CHUNK)  # features 0-15, 16-31 in either lane order
            low, high = T.bind(vec.hsum(low, CHUNK // 2)), T.bind(vec.hsum(high, CHUNK // 2))
            T.buffer_store(dest.halves, low * scale, [row, 2 * c])
            T.buffer_store(dest.halves, high * scale, [row, 2 * c + 1])
            T.buffer_store(dest.sums, (low + high) * scale, [row, c])
        else:
            T.buffer_store(dest.sums, vec.hsum(v, CHUNK), [row, c])
            if dest.halves is not None:
                low, high = vec.halves(v, CHUNK)
                T.buffer_store(dest.halves, vec.hsum(low, CHUNK // 2), [row, 2 * c])
                T.buffer_store(dest.halves, vec.hsum(high, CHUNK // 2), [row, 2 * c + 1])


def float_row(source: RowSource, bufs: Buffers, t, dest: tirx.Buffer, row) -> None:
    """Write input row t as float32 into dest row `row` (for float-weight kernels)."""
    state = source.setup(bufs, t)
    with T.serial(0, source.features // CHUNK) as c:
        T.buffer_store(dest, source.chunk(bufs, t, c, state), [row, vec.ramp(c * CHUNK, CHUNK)])


def quantize_all(
    source: RowSource, bufs: Buffers, tokens, threads: int, bits=16, order=None, halves=False
):
    """Every input row quantized (chunk lanes in `order`, natural by default) in a parallel
    pass of its own (a barrier follows): (rows, the same codes viewed as int32 words
    [tokens, K * bits / 32]: feature pairs of int16, quads of int8)."""
    q = QuantizedRows.alloc(tokens, source.features, bits, halves)
    with T.parallel(0, threads) as c:
        per = (tokens + threads - 1) // threads
        with T.serial(c * per, T.min((c + 1) * per, tokens)) as t:
            quantize_row(source, bufs, t, q, t, order or list(range(CHUNK)))
    words = source.features * bits // 32
    return q, T.decl_buffer((tokens, words), "int32", data=q.codes.data)
