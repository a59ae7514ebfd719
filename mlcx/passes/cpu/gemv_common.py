"""Per-row set-up shared by the decode (GEMV) kernels: combined scales, offsets, prefetch."""

from __future__ import annotations

from tvm.script.ir_builder import tirx as T

from mlcx.ops import cpu_vec as vec
from mlcx.passes.cpu.host import KernelConfig
from mlcx.passes.cpu.rows import QuantizedRows
from mlcx.passes.cpu.weights import CHUNK, QuantReader

GEMV_LANES = 8


def row_scales(
    reader: QuantReader, bufs, q: QuantizedRows, row, t, scales, offsets, r, order=None
) -> None:
    """scales[r, g] = weight scale * activation scale; offsets[r, :] sums offset terms.

    Vectorized over chunks (8 at a time, scalar tail) so that the dot loop only broadcasts.
    `order` permutes each vectorized group of 8 scales as it is stored (8-chunk formats only)."""
    chunks = int(q.scales.shape[1])
    lanes = GEMV_LANES if reader.fmt.group_size == CHUNK else 1
    full = chunks // lanes

    def update(g, width, order=None):
        idx = vec.ramp(g, width)
        value = reader.scale(bufs, row, idx) * q.scales[t, idx]
        T.buffer_store(scales, value if order is None else T.Shuffle([value], order), [r, idx])
        if reader.has_offset:
            term = reader.offset(bufs, row, idx) * q.sums[t, idx]
            slot = vec.ramp(0, width)
            T.buffer_store(offsets, offsets[r, slot] + term, [r, slot])

    T.buffer_store(offsets, vec.splat(vec.f32(0.0), GEMV_LANES), [r, vec.ramp(0, GEMV_LANES)])
    with T.serial(0, full) as i:
        update(i * lanes, lanes, order if lanes == GEMV_LANES else None)
    for g in range(full * lanes, chunks):
        update(g, 1)


def prefetch_steps(cfg: KernelConfig, rows: int, row_bytes: int) -> int:
    """Row steps ahead to prefetch: hardware prefetchers lose short interleaved row streams."""
    if not cfg.prefetch_bytes:
        return 0
    return max(1, cfg.prefetch_bytes // (rows * row_bytes))


def prefetch_row_planes(bufs, row) -> None:
    for plane in ("scales", "mins"):
        if plane in bufs:
            vec.prefetch(bufs[plane], [row, 0])
