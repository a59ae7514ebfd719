"""Per-row set-up shared by the decode (GEMV) kernels: combined scales, offsets, prefetch."""

from __future__ import annotations

from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.rows import QuantizedRows
from mlcx.kernels.cpu.weights import CHUNK, QuantReader

GEMV_LANES = 8


def vector_groups(reader: QuantReader, chunks: int) -> int:
    """Groups of eight chunks whose scales `row_scales` handles as one vector (one scale per
    chunk is needed); the remaining chunks go one at a time."""
    return chunks // GEMV_LANES if reader.fmt.group_size == CHUNK else 0


def row_scales(
    reader: QuantReader, bufs, q: QuantizedRows, row, t, scales, offsets, r, order=None
) -> None:
    """scales[r, g] = weight scale * activation scale; offsets[r, :] sums offset terms.

    Vectorized over the `vector_groups` (scalar tail) so that the dot loop only broadcasts.
    `order` permutes the eight scales of each vector group as they are stored."""
    chunks = int(q.scales.shape[1])
    groups = vector_groups(reader, chunks)

    def update(g, width):
        idx = vec.ramp(g, width)
        value = reader.scale(bufs, row, idx) * q.scales[t, idx]
        if width > 1 and order is not None:
            value = T.Shuffle([value], order)
        T.buffer_store(scales, value, [r, idx])
        if reader.has_offset:
            term = reader.offset(bufs, row, idx) * q.sums[t, idx]
            slot = vec.ramp(0, width)
            T.buffer_store(offsets, offsets[r, slot] + term, [r, slot])

    T.buffer_store(offsets, vec.splat(vec.f32(0.0), GEMV_LANES), [r, vec.ramp(0, GEMV_LANES)])
    with T.serial(0, groups) as i:
        update(i * GEMV_LANES, GEMV_LANES)
    with T.serial(groups * GEMV_LANES, chunks) as g:
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
