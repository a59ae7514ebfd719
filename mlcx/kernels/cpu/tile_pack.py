"""Packing weight rows into the GEMM's tiles with vector transposes instead of scalar stores.

A tile holds int16 code pairs as int32 [k/2, rows]: lane r of tile row kp is output row r's
codes of features 2kp and 2kp + 1, so the microkernel multiplies one vector of rows by one
broadcast activation pair. The stored weights are row-major, so packing is a transpose: each
row's chunk comes out as one vector of 16 pairs (`QuantReader.pair_chunk`), and a butterfly of
two-input shuffles swaps row and pair indices, log2(rows) stages for a block of rows.

Per call the pack touches every weight once; with scalar stores it cost more than 16 tokens
of microkernel work. Row-tiled weights (mlcx.kernels.cpu.qtiled) need no pack at all; this
serves row-major ones (artifacts from before tiling, shapes that do not tile).
"""

from __future__ import annotations

from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.weights import CHUNK, QuantReader

PAIRS = CHUNK // 2  # int32 pairs in one chunk: lanes of a row vector
BLOCK_ROWS = (16, 8, 4)  # rows transposed together, widest that divides the tile's rows


def block_rows(rows: int) -> int | None:
    """Rows of one transpose block for a tile of `rows` rows (None: rows has no such divisor)."""
    return next((b for b in BLOCK_ROWS if rows % b == 0), None)


def _swap_bit(a, b, bit: int):
    """Swap bit `bit` of the vector index with the same bit of the lane index, for the pair of
    vectors (a: that vector-index bit clear, b: set)."""
    step = 1 << bit
    low = [j if not j & step else PAIRS + j - step for j in range(PAIRS)]
    high = [j + step if not j & step else PAIRS + j for j in range(PAIRS)]
    return T.bind(T.Shuffle([a, b], low)), T.bind(T.Shuffle([a, b], high))


def transpose(vectors: list) -> list:
    """`len(vectors)` (a power of two, <= 16) int32 x 16 rows -> their low index bits swapped
    with the lanes': vector v, lanes h * R .. h * R + R - 1 hold pair h * R + v of every row."""
    vs = list(vectors)
    bit = 0
    while (1 << bit) < len(vs):
        step = 1 << bit
        for i in range(len(vs)):
            if not i & step:
                vs[i], vs[i + step] = _swap_bit(vs[i], vs[i + step], bit)
        bit += 1
    return vs


def pack_chunk(reader: QuantReader, view, first_row, g, dest, dest_row) -> None:
    """dest[dest_row + j, r] = pair j of chunk g of weight row first_row + r, for every row r
    of dest (a power-of-two count, or a multiple of 16)."""
    rows = int(dest.shape[1])
    width = block_rows(rows)
    for r0 in range(0, rows, width):
        chunk = [T.bind(reader.pair_chunk(view, first_row + r0 + r, g)) for r in range(width)]
        swapped = transpose(chunk)
        for v in range(width):
            for h in range(PAIRS // width):
                value = swapped[v]
                if width < PAIRS:
                    value = T.Shuffle([value], list(range(h * width, h * width + width)))
                T.buffer_store(dest, value, [dest_row + h * width + v, vec.ramp(r0, width)])


def pack_codes(reader: QuantReader, view, block, tile, k: int) -> None:
    """tile["codes"][kp, r] = reader.pair(view, block * rows + r, kp), a chunk at a time."""
    rows = int(tile["codes"].shape[1])
    with T.serial(0, k // CHUNK) as g:
        pack_chunk(reader, view, block * rows, g, tile["codes"], g * PAIRS)
