"""Linear kernels for row-tiled quantized weights (mlcx.quantization.tiling), any token count.

The tiled layout puts the codes of 16 output rows for one pair of input features in one
vector, so unpacking is a shift and a mask (4-bit) or a sign extension (8-bit) per pair, with
no transposes. One loop nest then serves decode, batched decode and prefill: each thread
walks its bands of 16 rows; for a band, token blocks of up to `batch_tokens` tokens keep
their accumulators in registers (int32 per chunk, float32 across chunks) while the band's
codes, a few KiB, are re-read from L1 by each token block. Activations are int16 per 32
features (mlcx.kernels.cpu.rows), as in the row-major kernels; long prefills take int8 where
LinearKernels.INT8 asks (mlcx.kernels.cpu.tiled_dots). The 5-bit and K-quant formats
(mlcx.kernels.cpu.block_reader) add their high bits to the codes and scale each sub-block of a
chunk on its own (Q6_K: two int32 sums a chunk).
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import tiled_reader, vec
from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels
from mlcx.kernels.cpu.linear_spec import (
    LinearSpec,
    declare_params,
    split_range,
    store_out,
    token_blocks,
)
from mlcx.kernels.cpu.rows import QuantizedRows, quantize_all, quantize_row
from mlcx.kernels.cpu.tiled_dots import PairDots, dots_for
from mlcx.kernels.cpu.tiled_reader import PAIRS, ROWS
from mlcx.kernels.cpu.weights import CHUNK, NATURAL

PRIVATE_ROWS_MAX = 16  # up to this many tokens each thread quantizes the rows itself (no barrier)


def _block(spec, reader, dots, views, q, words, band, t0, count: int, ahead: int) -> None:
    """out[t0 : t0 + count, band's 16 rows] (count static); prefetching `ahead` bytes on."""
    rv = vec.ramp(0, ROWS)
    facc = T.alloc_buffer((count, ROWS), "float32")
    subs = reader.subs  # scale groups per chunk (Q6_K: 2), each with its own int32 sums
    iacc = T.alloc_buffer((count * subs, ROWS), "int32")
    for t in range(count):
        T.buffer_store(facc, vec.splat(vec.f32(0.0), ROWS), [t, rv])
    with T.serial(0, spec.in_features // CHUNK) as g:
        for i in range(count * subs):
            T.buffer_store(iacc, vec.splat(tirx.const(0, "int32"), ROWS), [i, rv])
        # A loop over quarters, not unrolled: unrolled, LLVM hoists every plane and spills.
        with T.serial(0, PAIRS // 4) as quarter:
            if ahead:
                reader.prefetch_quarter(views, band, g, quarter, ahead)
            sub = quarter * subs // 4
            planes = dots.planes(reader, views, band, g, quarter)
            first = g * dots.words_per_chunk + quarter * len(planes)
            for m, plane in enumerate(planes):
                w = T.bind(plane)
                for t in range(count):
                    i = t * subs + sub
                    acc = dots.accumulate(iacc[i, rv], w, words[t0 + t, first + m])
                    T.buffer_store(iacc, acc, [i, rv])
        wsc = [T.bind(reader.scales(views, band, g, s)) for s in range(subs)]
        woff = [
            T.bind(o) if o is not None else None for o in dots.offsets(reader, views, band, g, wsc)
        ]
        for t in range(count):
            value = None
            for s in range(subs):
                half = s if len(woff) > 1 else None
                dot = q.scaled_dots(iacc[t * subs + s, rv], wsc[s], woff[s], t0 + t, g, ROWS, half)
                value = dot if value is None else value + dot
            T.buffer_store(facc, facc[t, rv] + value, [t, rv])
    for t in range(count):
        store_out(spec, views["bufs"], t0 + t, vec.ramp(band * ROWS, ROWS), facc[t, rv])


def _walk(spec, cfg: KernelConfig, reader, dots, views, q, words, tokens, c) -> None:
    begin, end = split_range(spec.out_features // ROWS, cfg.threads, c)
    with T.serial(begin, end) as band:

        def run(t0, size, band=band):
            _block(spec, reader, dots, views, q, words, band, t0, size, cfg.prefetch_bytes)

        # A step of a few sequences or drafted tokens is one pass over the weights.
        token_blocks(cfg.batch_tokens, tokens, run, exact_tail=True)


def _private(spec, cfg, reader, views, tokens) -> None:
    """Few tokens: every thread quantizes all rows itself, then walks its bands."""
    with T.parallel(0, cfg.threads) as c:
        q = QuantizedRows.alloc(tokens, spec.in_features)
        with T.serial(0, tokens) as t:
            quantize_row(spec.source, views["bufs"], t, q, t, NATURAL)
        pairs = T.decl_buffer((tokens, spec.in_features // 2), "int32", data=q.codes.data)
        _walk(spec, cfg, reader, PairDots(), views, q, pairs, tokens, c)


def _shared(spec, cfg, reader, views, tokens) -> None:
    """Many tokens: rows quantized in a parallel pass first, shared by every thread. int8
    activations, where asked for, serve here only: a prefill is bound by multiplies, a decode
    step by the weights' bytes, which int8 would not shrink."""
    dots = dots_for(reader, cfg.linear_kernels is LinearKernels.INT8)
    bufs = views["bufs"]
    q, words = quantize_all(spec.source, bufs, tokens, cfg.threads, dots.bits, list(dots.order))
    with T.parallel(0, cfg.threads) as c:
        _walk(spec, cfg, reader, dots, views, q, words, tokens, c)


def build_tiled_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    reader = tiled_reader.reader_for(spec.fmt)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
        tokens, bufs = declare_params(spec)
        views = reader.views(bufs, spec.out_features, spec.in_features)
        with T.If(tokens <= PRIVATE_ROWS_MAX):
            with T.Then():
                _private(spec, cfg, reader, views, tokens)
            with T.Else():
                _shared(spec, cfg, reader, views, tokens)
    return ib.get()
