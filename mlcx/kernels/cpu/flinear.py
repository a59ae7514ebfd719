"""Float-weight linear kernels for CPU (float32 or float16 weights, float32 math).

Same plan as the quantized kernels, without integer codes: decode walks `gemv_rows` weight rows
at a time against the (prologue-applied) input rows; prefill packs `gemm_rows` rows into a
transposed tile [K, rows] and runs a `gemm_tokens` x rows FMA microkernel over it.
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_spec import LinearSpec, declare_params, divisor, split_range, store_out
from mlcx.kernels.cpu.rows import float_row
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.quantization.formats import DenseFormat

LANES = 8


def supports(fmt) -> bool:
    return isinstance(fmt, DenseFormat) and fmt.dtype in ("float32", "float16")


def _weight(bufs, row, index, lanes: int) -> tirx.PrimExpr:
    return vec.to_f32(bufs["weight"][row, vec.ramp(index, lanes)])


def _gemv(spec: LinearSpec, cfg: KernelConfig, bufs, tokens) -> None:
    k, n = spec.in_features, spec.out_features
    rows = divisor(n, cfg.gemv_rows)
    with T.parallel(0, cfg.threads) as c:
        x = T.alloc_buffer((tokens, k), "float32")
        with T.serial(0, tokens) as t:
            float_row(spec.source, bufs, t, x, t)
        acc = T.alloc_buffer((rows, LANES), "float32")
        begin, end = split_range(n // rows, cfg.threads, c)
        with T.serial(begin, end) as step, T.serial(0, tokens) as t:
            for r in range(rows):
                T.buffer_store(acc, vec.splat(vec.f32(0.0), LANES), [r, vec.ramp(0, LANES)])
            with T.serial(0, k // LANES) as i:
                xv = T.bind(x[t, vec.ramp(i * LANES, LANES)])
                for r in range(rows):
                    w = _weight(bufs, step * rows + r, i * LANES, LANES)
                    T.buffer_store(
                        acc, acc[r, vec.ramp(0, LANES)] + w * xv, [r, vec.ramp(0, LANES)]
                    )
            for r in range(rows):
                total = vec.hsum(acc[r, vec.ramp(0, LANES)], LANES)
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
    for t in range(tokens):
        store_out(spec, bufs, t0 + t, vec.ramp(block * rows, rows), acc[t, rv])


def _gemm(spec: LinearSpec, cfg: KernelConfig, bufs, tokens) -> None:
    k, n = spec.in_features, spec.out_features
    x = T.alloc_buffer((tokens, k), "float32")
    with T.parallel(0, cfg.threads) as c:
        begin, end = split_range(tokens, cfg.threads, c)
        with T.serial(begin, end) as t:
            float_row(spec.source, bufs, t, x, t)
    rows, step = cfg.gemm_rows, cfg.gemm_tokens
    with T.parallel(0, cfg.threads) as c:
        tile = T.alloc_buffer((k, rows), "float32")
        begin, end = split_range(n // rows, cfg.threads, c)
        with T.serial(begin, end) as block:
            with T.serial(0, k) as kk:
                for r in range(rows):
                    value = vec.to_f32(bufs["weight"][block * rows + r, kk])
                    T.buffer_store(tile, value, [kk, r])
            with T.serial(0, tokens // step) as tb:
                _micro(spec, tile, x, bufs, block, tb * step, step)
            with T.serial(tokens // step * step, tokens) as t:
                _micro(spec, tile, x, bufs, block, t, 1)


def build_float_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    if spec.in_features % CHUNK:
        raise ValueError(f"float CPU kernels need in_features divisible by {CHUNK}")
    gemm_ok = spec.out_features % cfg.gemm_rows == 0
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        tokens, bufs = declare_params(spec)
        if not gemm_ok:
            _gemv(spec, cfg, bufs, tokens)
        else:
            with T.If(tokens <= cfg.gemv_max_tokens):
                with T.Then():
                    _gemv(spec, cfg, bufs, tokens)
                with T.Else():
                    _gemm(spec, cfg, bufs, tokens)
    return ib.get()
