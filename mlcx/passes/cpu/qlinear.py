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

from mlcx.ops import cpu_vec as vec
from mlcx.passes.cpu.host import KernelConfig
from mlcx.passes.cpu.linear_spec import LinearSpec, declare_params, divisor, split_range, store_out
from mlcx.passes.cpu.rows import QuantizedRows, quantize_row
from mlcx.passes.cpu.weights import CHUNK, NATURAL, QuantReader

GEMV_LANES = 8
# 4-bit decode reads two chunks (32 bytes) as 16 uint16 words and pulls out nibble k of every
# word with a shift and a mask: no widening shuffles. Lane w of extraction k holds feature
# 4 * (w % 8) + k of chunk w // 8, so the activations are permuted once into that order.
PAIR_ORDER = [(w // 8) * CHUNK + 4 * (w % 8) + k for k in range(4) for w in range(16)]


def _row_scales(reader: QuantReader, bufs, q: QuantizedRows, row, t, scales, offsets, r) -> None:
    """scales[r, g] = weight scale * activation scale; offsets[r, :] sums offset terms.

    Vectorized over chunks (8 at a time, scalar tail) so that the dot loop only broadcasts."""
    chunks = int(q.scales.shape[1])
    lanes = GEMV_LANES if reader.fmt.group_size == CHUNK else 1
    full = chunks // lanes

    def update(g, width):
        idx = vec.ramp(g, width)
        T.buffer_store(scales, reader.scale(bufs, row, idx) * q.scales[t, idx], [r, idx])
        if reader.has_offset:
            term = reader.offset(bufs, row, idx) * q.sums[t, idx]
            slot = vec.ramp(0, width)
            T.buffer_store(offsets, offsets[r, slot] + term, [r, slot])

    T.buffer_store(offsets, vec.splat(vec.f32(0.0), GEMV_LANES), [r, vec.ramp(0, GEMV_LANES)])
    with T.serial(0, full) as i:
        update(i * lanes, lanes)
    for g in range(full * lanes, chunks):
        update(g, 1)


def _prefetch_steps(cfg: KernelConfig, rows: int, row_bytes: int) -> int:
    """Row steps ahead to prefetch: hardware prefetchers lose short interleaved row streams."""
    if not cfg.prefetch_bytes:
        return 0
    return max(1, cfg.prefetch_bytes // (rows * row_bytes))


def _prefetch_row_planes(bufs, row) -> None:
    for plane in ("scales", "mins"):
        if plane in bufs:
            vec.prefetch(bufs[plane], [row, 0])


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
                _row_scales(reader, bufs, q, step * rows + r, t, scales, offsets, r)
                T.buffer_store(acc, vec.splat(vec.f32(0.0), lanes), [r, vec.ramp(0, lanes)])
            ahead = _prefetch_steps(cfg, rows, reader.fmt.bits * k // 8)
            if ahead:
                for r in range(rows):
                    _prefetch_row_planes(bufs, step * rows + r + ahead * rows)
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


def _permute_pairs(q: QuantizedRows, xp, t, k: int) -> None:
    """xp[t] = q.codes[t] in PAIR_ORDER, two chunks at a time."""
    with T.serial(0, k // (2 * CHUNK)) as p:
        first = q.codes[t, vec.ramp(p * 2 * CHUNK, CHUNK)]
        second = q.codes[t, vec.ramp(p * 2 * CHUNK + CHUNK, CHUNK)]
        T.buffer_store(xp, T.Shuffle([first, second], PAIR_ORDER), [t, vec.ramp(p * 64, 64)])


def _pair_dot(words, xp, t, p) -> tirx.PrimExpr:
    """int32 x 8: lanes 0-3 sum to chunk 2p's dot product, lanes 4-7 to chunk 2p + 1's."""
    dot = None
    for k in range(4):
        nibble = (words >> vec.splat(tirx.const(4 * k, "uint16"), 16)) & vec.splat(
            tirx.const(15, "uint16"), 16
        )
        x = xp[t, vec.ramp(p * 64 + k * 16, 16)]
        term = vec.madd_i16(T.Cast("int16x16", nibble), x, 16)
        dot = term if dot is None else dot + term
    return dot


def _gemv_pairs(spec: LinearSpec, cfg: KernelConfig, reader: QuantReader, bufs, tokens) -> None:
    """Decode for 4-bit formats with an even number of chunks (see PAIR_ORDER)."""
    k, n = spec.in_features, spec.out_features
    chunks, rows = k // CHUNK, divisor(n, cfg.gemv_rows)
    lanes = GEMV_LANES
    words = T.decl_buffer((n, k // 4), "uint16", data=bufs["qweight"].data)
    with T.parallel(0, cfg.threads) as c:
        q = QuantizedRows.alloc(tokens, k)
        xp = T.alloc_buffer((tokens, k), "int16")
        with T.serial(0, tokens) as t:
            quantize_row(spec.source, bufs, t, q, t, NATURAL)
            _permute_pairs(q, xp, t, k)
        acc = T.alloc_buffer((rows, lanes), "float32")
        scales = T.alloc_buffer((rows, chunks), "float32")
        offsets = T.alloc_buffer((rows, lanes), "float32")
        begin, end = split_range(n // rows, cfg.threads, c)
        ahead = _prefetch_steps(cfg, rows, k // 2)
        with T.serial(begin, end) as step, T.serial(0, tokens) as t:
            for r in range(rows):
                _row_scales(reader, bufs, q, step * rows + r, t, scales, offsets, r)
                T.buffer_store(acc, vec.splat(vec.f32(0.0), lanes), [r, vec.ramp(0, lanes)])
                if ahead:
                    _prefetch_row_planes(bufs, step * rows + r + ahead * rows)
            with T.serial(0, chunks // 2) as p:
                for r in range(rows):
                    row = step * rows + r
                    if ahead:
                        vec.prefetch(words, [row + ahead * rows, p * 16])
                    dot = T.bind(_pair_dot(T.bind(words[row, vec.ramp(p * 16, 16)]), xp, t, p))
                    two = scales[r, vec.ramp(p * 2, 2)]
                    pair_scales = T.Shuffle([two] * 4, [0] * 4 + [1] * 4)
                    scaled = T.Cast("float32x8", dot) * pair_scales
                    T.buffer_store(
                        acc, acc[r, vec.ramp(0, lanes)] + scaled, [r, vec.ramp(0, lanes)]
                    )
            for r in range(rows):
                total = acc[r, vec.ramp(0, lanes)] + offsets[r, vec.ramp(0, lanes)]
                store_out(spec, bufs, t, step * rows + r, vec.hsum(total, lanes))


def _pack_tile(reader: QuantReader, bufs, view, block, tile, k: int) -> None:
    """Codes of tile rows as int32 pairs [k/2, rows]; scales and offsets as [chunks, rows]."""
    rows = int(tile["codes"].shape[1])
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
        for t in range(tokens):
            value = T.Cast(f"float32x{rows}", iacc[t, rv]) * tile["scales"][g, rv]
            value = value * vec.splat(q.scales[t0 + t, g], rows)
            if reader.has_offset:
                value = value + tile["offsets"][g, rv] * vec.splat(q.sums[t0 + t, g], rows)
            T.buffer_store(facc, facc[t, rv] + value, [t, rv])
    for t in range(tokens):
        store_out(spec, bufs, t0 + t, vec.ramp(block * rows, rows), facc[t, rv])


def _gemm(spec: LinearSpec, cfg: KernelConfig, reader: QuantReader, bufs, view, tokens) -> None:
    k, n = spec.in_features, spec.out_features
    q = QuantizedRows.alloc(tokens, k)
    with T.parallel(0, cfg.threads) as c:
        begin, end = split_range(tokens, cfg.threads, c)
        with T.serial(begin, end) as t:
            quantize_row(spec.source, bufs, t, q, t, NATURAL)
    pairs = T.decl_buffer((tokens, k // 2), "int32", data=q.codes.data)
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
            with T.serial(0, tokens // step) as tb:
                _micro(spec, reader, tile, q, pairs, bufs, block, tb * step, step)
            with T.serial(tokens // step * step, tokens) as t:
                _micro(spec, reader, tile, q, pairs, bufs, block, t, 1)


def _decode(spec: LinearSpec, cfg: KernelConfig, reader: QuantReader, bufs, view, tokens):
    if reader.fmt.bits == 4 and spec.in_features % (2 * CHUNK) == 0:
        _gemv_pairs(spec, cfg, reader, bufs, tokens)
    else:
        _gemv(spec, cfg, reader, bufs, view, tokens)


def build_quantized_linear(spec: LinearSpec, cfg: KernelConfig) -> tirx.PrimFunc:
    reader = QuantReader(spec.fmt)
    if spec.out_features % cfg.gemm_rows and spec.out_features % cfg.lanes == 0:
        cfg = dataclasses.replace(cfg, gemm_rows=cfg.lanes)  # narrower tiles still divide N
    gemm_ok = spec.out_features % cfg.gemm_rows == 0
    with IRBuilder() as ib, T.prim_func():
        T.func_name(spec.name)
        T.func_attr({"tirx.noalias": True, "tirx.is_scheduled": True})
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
