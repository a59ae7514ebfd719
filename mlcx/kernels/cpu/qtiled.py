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
from mlcx.kernels.cpu.tiled_block import BandInputs, band_block
from mlcx.kernels.cpu.tiled_dots import PairDots, dots_for
from mlcx.kernels.cpu.tiled_reader import ROWS
from mlcx.kernels.cpu.weights import NATURAL
from mlcx.kernels.lowering_marks import EXACT_BUFFERS

PRIVATE_ROWS_MAX = 16  # up to this many tokens each thread quantizes the rows itself (no barrier)


def _walk(spec, cfg: KernelConfig, reader, dots, views, q, words, tokens, c) -> None:
    inputs = BandInputs(reader, dots, views, q, words, spec.in_features, cfg.prefetch_bytes)
    begin, end = split_range(spec.out_features // ROWS, cfg.threads, c)
    with T.serial(begin, end) as band:

        def run(t0, size, band=band):
            def store(t, value):
                store_out(spec, views["bufs"], t0 + t, vec.ramp(band * ROWS, ROWS), value)

            rows = [t0 + t for t in range(size)]
            band_block(inputs, band, rows, store)

        # A step of a few sequences or drafted tokens is one pass over the weights.
        token_blocks(cfg.batch_tokens, tokens, run, exact_tail=True)


def _private(spec, cfg, reader, views, tokens) -> None:
    """Few tokens: every thread quantizes all rows itself, then walks its bands."""
    with T.parallel(0, cfg.threads) as c:
        q = QuantizedRows.alloc(tokens, spec.in_features, halves=reader.half_offsets)
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
    order, halves = list(dots.order), reader.half_offsets
    q, words = quantize_all(spec.source, bufs, tokens, cfg.threads, dots.bits, order, halves)
    with T.parallel(0, cfg.threads) as c:
        _walk(spec, cfg, reader, dots, views, q, words, tokens, c)


def build_tiled_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    reader = tiled_reader.reader_for(spec.fmt, cfg)
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True, EXACT_BUFFERS: True})
        tokens, bufs = declare_params(spec)
        views = reader.views(bufs, spec.out_features, spec.in_features)
        with T.If(tokens <= PRIVATE_ROWS_MAX):
            with T.Then():
                _private(spec, cfg, reader, views, tokens)
            with T.Else():
                _shared(spec, cfg, reader, views, tokens)
    return ib.get()
