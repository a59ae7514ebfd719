"""Float-weight linear kernels for CPU (float32 or float16 weights, float32 math).

Same plan as the quantized kernels, without integer codes: decode walks `gemv_rows` weight rows
at a time against the (prologue-applied) input rows; prefill packs `gemm_rows` rows into a
transposed tile [K, rows] and runs a `gemm_tokens` x rows FMA microkernel over it.

Any shape is served inside the kernel (an image encoder's patch embedding has 3 * 14 * 14
features, SigLIP's MLP 4304 rows), so no caller pads around it: the last tile of a GEMM whose
rows are not a multiple of `gemm_rows` is packed with zero rows and stores only its real rows,
and plain input rows whose features are not a multiple of the 32-feature chunk copy their last
features apart and the GEMV sums them after its vector loop. Fused prologues (RMSNorm,
SwiGLU) read whole chunks.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_spec import LinearSpec, declare_params, divisor, split_range, store_out
from mlcx.kernels.cpu.rows import PlainRows, float_row
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.kernels.lowering_marks import EXACT_BUFFERS
from mlcx.quantization.formats import DenseFormat

LANES = 8


def supports(fmt) -> bool:
    return isinstance(fmt, DenseFormat) and fmt.dtype in ("float32", "float16")


def takes_features(spec: LinearSpec) -> bool:
    """Whether the kernel reads spec's input rows: whole chunks, or plain rows of any width."""
    return spec.in_features % CHUNK == 0 or isinstance(spec.source, PlainRows)


def _weight(bufs, row, index, lanes: int) -> tirx.PrimExpr:
    return vec.to_f32(bufs["weight"][row, vec.ramp(index, lanes)])


def _input_row(spec: LinearSpec, bufs, t, x) -> None:
    """x[t] = input row t as float32: whole chunks through the source, then the plain rows'
    last features (fewer than a chunk)."""
    float_row(spec.source, bufs, t, x, t)
    rest = spec.in_features % CHUNK
    if rest:
        start = spec.in_features - rest
        T.buffer_store(x, bufs["x"][t, vec.ramp(start, rest)], [t, vec.ramp(start, rest)])


def _gemv(spec: LinearSpec, cfg: KernelConfig, bufs, tokens) -> None:
    k, n = spec.in_features, spec.out_features
    rows, whole = divisor(n, cfg.gemv_rows), k - k % LANES
    with T.parallel(0, cfg.threads) as c:
        x = T.alloc_buffer((tokens, k), "float32")
        with T.serial(0, tokens) as t:
            _input_row(spec, bufs, t, x)
        acc = T.alloc_buffer((rows, LANES), "float32")
        begin, end = split_range(n // rows, cfg.threads, c)
        with T.serial(begin, end) as step, T.serial(0, tokens) as t:
            for r in range(rows):
                T.buffer_store(acc, vec.splat(vec.f32(0.0), LANES), [r, vec.ramp(0, LANES)])
            with T.serial(0, whole // LANES) as i:
                xv = T.bind(x[t, vec.ramp(i * LANES, LANES)])
                for r in range(rows):
                    w = _weight(bufs, step * rows + r, i * LANES, LANES)
                    T.buffer_store(
                        acc, acc[r, vec.ramp(0, LANES)] + w * xv, [r, vec.ramp(0, LANES)]
                    )
            for r in range(rows):
                total = vec.hsum(acc[r, vec.ramp(0, LANES)], LANES)
                for j in range(whole, k):  # the last features, fewer than a vector
                    total = total + _weight(bufs, step * rows + r, j, 1) * x[t, j]
                store_out(spec, bufs, t, step * rows + r, total)


def _micro(spec, tile, x, bufs, block, t0, tokens: int) -> None:
    rows = int(tile.shape[1])
    rv = vec.ramp(0, rows)
    acc = T.alloc_buffer((tokens, rows), "float32")
    for t in range(tokens):
        T.buffer_store(acc, vec.splat(vec.f32(0.0), rows), [t, rv])
    with T.serial(0, spec.in_features) as kk:
        w = T.bind(tile[kk, rv])
        for t in range(tokens):
            T.buffer_store(acc, acc[t, rv] + vec.splat(x[t0 + t, kk], rows) * w, [t, rv])
    tail = spec.out_features % rows  # real rows of the last tile; 0: every tile is whole
    for t in range(tokens):
        if not tail:
            store_out(spec, bufs, t0 + t, vec.ramp(block * rows, rows), acc[t, rv])
            continue
        with T.If(block < spec.out_features // rows):
            with T.Then():
                store_out(spec, bufs, t0 + t, vec.ramp(block * rows, rows), acc[t, rv])
            with T.Else():
                last = acc[t, vec.ramp(0, tail)]
                store_out(spec, bufs, t0 + t, vec.ramp(block * rows, tail), last)


def _pack(spec: LinearSpec, bufs, tile, block, rows: int) -> None:
    """tile[kk, r] = weight row block * rows + r at feature kk; rows past the weight's (in the
    last tile) are zeros."""
    n, tail = spec.out_features, spec.out_features % rows
    with T.serial(0, spec.in_features) as kk:
        for r in range(rows):
            row = block * rows + r
            if tail and r >= tail:  # rows below the tail are real in every tile
                value = vec.to_f32(bufs["weight"][T.min(row, n - 1), kk])
                value = T.Select(row < n, value, vec.f32(0.0))
            else:
                value = vec.to_f32(bufs["weight"][row, kk])
            T.buffer_store(tile, value, [kk, r])


def _gemm(spec: LinearSpec, cfg: KernelConfig, bufs, tokens) -> None:
    k, n = spec.in_features, spec.out_features
    x = T.alloc_buffer((tokens, k), "float32")
    with T.parallel(0, cfg.threads) as c:
        begin, end = split_range(tokens, cfg.threads, c)
        with T.serial(begin, end) as t:
            _input_row(spec, bufs, t, x)
    rows, step = cfg.gemm_rows, cfg.gemm_tokens
    with T.parallel(0, cfg.threads) as c:
        tile = T.alloc_buffer((k, rows), "float32")
        begin, end = split_range((n + rows - 1) // rows, cfg.threads, c)
        with T.serial(begin, end) as block:
            _pack(spec, bufs, tile, block, rows)
            with T.serial(0, tokens // step) as tb:
                _micro(spec, tile, x, bufs, block, tb * step, step)
            with T.serial(tokens // step * step, tokens) as t:
                _micro(spec, tile, x, bufs, block, t, 1)


def build_float_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    if not takes_features(spec):
        raise ValueError(
            f"float CPU kernels with a fused {type(spec.source).__name__} prologue need "
            f"in_features divisible by {CHUNK}, not {spec.in_features}"
        )
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, EXACT_BUFFERS: True})
        tokens, bufs = declare_params(spec)
        with T.If(tokens <= cfg.gemv_max_tokens):
            with T.Then():
                _gemv(spec, cfg, bufs, tokens)
            with T.Else():
                _gemm(spec, cfg, bufs, tokens)
    return ib.get()
