"""Quantized linear kernels for CPU: int16 activations, integer dot products, f32 outputs.

Decode (few tokens, memory bound): rows are split over the threads; each thread quantizes the
few input rows itself (no barrier), then streams its weight rows once, unpacking codes in
registers and accumulating `gemv_rows` rows at a time (one by default: a single sequential
stream per thread is what the prefetchers serve best).

Prefill (many tokens, compute bound): input rows are quantized in a first parallel pass; then
each thread packs `gemm_rows` weight rows at a time into a tile whose vector lanes are output
rows (int16 pairs of features), and a microkernel of `gemm_tokens` tokens accumulates exact
int32 dot products per 32-feature chunk before scaling them into float32.
"""

from __future__ import annotations

import dataclasses

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.gemv_common import GEMV_LANES, prefetch_row_planes, prefetch_steps, row_scales
from mlcx.kernels.cpu.gemv_pairs import gemv_pairs
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_spec import (
    LinearSpec,
    declare_params,
    divisor,
    split_range,
    store_out,
    token_blocks,
)
from mlcx.kernels.cpu.rows import QuantizedRows, quantize_all, quantize_row
from mlcx.kernels.cpu.tile_pack import block_rows, pack_codes
from mlcx.kernels.cpu.weights import CHUNK, QuantReader
from mlcx.kernels.lowering_marks import EXACT_BUFFERS


def _gemv(spec: LinearSpec, cfg: KernelConfig, reader: QuantReader, bufs, view, tokens) -> None:
    k, n = spec.in_features, spec.out_features
    chunks, rows = k // CHUNK, divisor(n, cfg.gemv_rows)
    lanes = GEMV_LANES
    with T.parallel(0, cfg.threads) as c:
        q = QuantizedRows.alloc(tokens, k)
        with T.serial(0, tokens) as t:
            quantize_row(spec.source, bufs, t, q, t, reader.lane_order)
        acc = T.alloc_buffer((rows, lanes), "float32")
        scales = T.alloc_buffer((rows, chunks), "float32")
        offsets = T.alloc_buffer((rows, lanes), "float32")
        begin, end = split_range(n // rows, cfg.threads, c)
        with T.serial(begin, end) as step, T.serial(0, tokens) as t:
            for r in range(rows):
                row_scales(reader, bufs, q, step * rows + r, t, scales, offsets, r)
                T.buffer_store(acc, vec.splat(vec.f32(0.0), lanes), [r, vec.ramp(0, lanes)])
            ahead = prefetch_steps(cfg, rows, reader.fmt.bits * k // 8)
            if ahead:
                for r in range(rows):
                    prefetch_row_planes(bufs, step * rows + r + ahead * rows)
            with T.serial(0, chunks) as g:
                x = T.bind(q.codes[t, vec.ramp(g * CHUNK, CHUNK)])
                for r in range(rows):
                    if ahead:
                        vec.prefetch(view, [step * rows + r + ahead * rows, g * reader.chunk_bytes])
                    dot = vec.madd_i16(reader.codes(view, step * rows + r, g), x, CHUNK)
                    low, high = vec.halves(T.bind(dot), CHUNK // 2)
                    scaled = T.Cast("float32x8", low + high) * vec.splat(scales[r, g], lanes)
                    T.buffer_store(
                        acc, acc[r, vec.ramp(0, lanes)] + scaled, [r, vec.ramp(0, lanes)]
                    )
            for r in range(rows):
                total = acc[r, vec.ramp(0, lanes)] + offsets[r, vec.ramp(0, lanes)]
                store_out(spec, bufs, t, step * rows + r, vec.hsum(total, lanes))


def _pack_tile(reader: QuantReader, bufs, view, block, tile, k: int) -> None:
    """Codes of tile rows as int32 pairs [k/2, rows]; scales and offsets as [chunks, rows]."""
    rows = int(tile["codes"].shape[1])
    if block_rows(rows):
        pack_codes(reader, view, block, tile, k)
    else:
        with T.serial(0, k // 2) as kp:
            for r in range(rows):
                T.buffer_store(tile["codes"], reader.pair(view, block * rows + r, kp), [kp, r])
    with T.serial(0, k // CHUNK) as g:
        for r in range(rows):
            T.buffer_store(tile["scales"], reader.scale(bufs, block * rows + r, g), [g, r])
            if reader.has_offset:
                T.buffer_store(tile["offsets"], reader.offset(bufs, block * rows + r, g), [g, r])


def _micro(spec, reader, tile, q: QuantizedRows, pairs, bufs, block, t0, tokens: int) -> None:
    """out[t0 : t0 + tokens, tile rows] from the packed tile (accumulators in registers)."""
    rows = int(tile["codes"].shape[1])
    rv = vec.ramp(0, rows)
    facc = T.alloc_buffer((tokens, rows), "float32")
    iacc = T.alloc_buffer((tokens, rows), "int32")
    for t in range(tokens):
        T.buffer_store(facc, vec.splat(vec.f32(0.0), rows), [t, rv])
    with T.serial(0, spec.in_features // CHUNK) as g:
        for t in range(tokens):
            T.buffer_store(iacc, vec.splat(tirx.const(0, "int32"), rows), [t, rv])
        # Not unrolled: unrolled, LLVM hoists all 16 weight loads and spills them.
        with T.serial(0, CHUNK // 2) as j:
            w = T.bind(T.reinterpret(f"int16x{2 * rows}", tile["codes"][g * (CHUNK // 2) + j, rv]))
            for t in range(tokens):
                xv = T.reinterpret(f"int16x{2 * rows}", vec.splat(pairs[t0 + t, g * 16 + j], rows))
                T.buffer_store(iacc, iacc[t, rv] + vec.madd_i16(w, xv, 2 * rows), [t, rv])
        offsets = tile["offsets"][g, rv] if reader.has_offset else None
        for t in range(tokens):
            value = q.scaled_dots(iacc[t, rv], tile["scales"][g, rv], offsets, t0 + t, g, rows)
            T.buffer_store(facc, facc[t, rv] + value, [t, rv])
    for t in range(tokens):
        store_out(spec, bufs, t0 + t, vec.ramp(block * rows, rows), facc[t, rv])


def _gemm(spec: LinearSpec, cfg: KernelConfig, reader: QuantReader, bufs, view, tokens) -> None:
    k, n = spec.in_features, spec.out_features
    q, pairs = quantize_all(spec.source, bufs, tokens, cfg.threads)
    rows, step = cfg.gemm_rows, cfg.gemm_tokens
    with T.parallel(0, cfg.threads) as c:
        tile = {
            "codes": T.alloc_buffer((k // 2, rows), "int32"),
            "scales": T.alloc_buffer((k // CHUNK, rows), "float32"),
            "offsets": T.alloc_buffer((k // CHUNK, rows), "float32"),
        }
        begin, end = split_range(n // rows, cfg.threads, c)
        with T.serial(begin, end) as block:
            _pack_tile(reader, bufs, view, block, tile, k)

            def run(t0, size, block=block):
                _micro(spec, reader, tile, q, pairs, bufs, block, t0, size)

            token_blocks(step, tokens, run)


def _decode(spec: LinearSpec, cfg: KernelConfig, reader: QuantReader, bufs, view, tokens):
    if reader.fmt.bits == 4 and spec.in_features % (2 * CHUNK) == 0:
        gemv_pairs(spec, cfg, reader, bufs, tokens)
    else:
        _gemv(spec, cfg, reader, bufs, view, tokens)


def build_quantized_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    reader = QuantReader(spec.fmt)
    if spec.out_features % cfg.gemm_rows and spec.out_features % cfg.lanes == 0:
        cfg = dataclasses.replace(cfg, gemm_rows=cfg.lanes)  # narrower tiles still divide N
    gemm_ok = spec.out_features % cfg.gemm_rows == 0
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, EXACT_BUFFERS: True})
        tokens, bufs = declare_params(spec)
        view = reader.code_view(bufs, spec.out_features, spec.in_features)
        if not gemm_ok:
            _decode(spec, cfg, reader, bufs, view, tokens)
        else:
            with T.If(tokens <= cfg.gemv_max_tokens):
                with T.Then():
                    _decode(spec, cfg, reader, bufs, view, tokens)
                with T.Else():
                    _gemm(spec, cfg, reader, bufs, view, tokens)
    return ib.get()
