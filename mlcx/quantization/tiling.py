"""The row-tiled layout of group-quantized weights, which mlcx's CPU kernels read directly.

Same codes, scales and minimums as the row-major layout, and the same array shapes; only the
order of the bytes inside each band of TILE_ROWS rows changes, so that one vector load yields
the codes of TILE_ROWS output rows for a pair of input features (the operand of an int16
pair dot product whose lanes are rows). llama.cpp's CPU backend repacks Q4_0/Q8_0 blocks the
same way at load time; mlcx does it once, when the artifact is written.

Within band b (rows 16b .. 16b + 15) and chunk g (features 32g .. 32g + 31), row r, feature
32g + 2p + e (pair p, e = 0 or 1):
- 4-bit: 256 bytes = 4 quarters of 32 little-endian uint16 words; quarter p // 4, word
  2r + e, nibble p % 4 (so `(word >> 4m) & 15` gives pair 4q + m of all 16 rows at once).
- 8-bit: 512 bytes = 16 pairs of 32 bytes; pair p, byte 2r + e.
- scales / minimums per group: the band's 16 rows of one group side by side.
"""

from __future__ import annotations

import numpy as np

from mlcx.quantization.bit_packing import or_along

TILE_ROWS = 16
CHUNK = 32


def check_tileable(out_features: int, in_features: int) -> None:
    if out_features % TILE_ROWS or in_features % CHUNK:
        raise ValueError(
            f"a row-tiled weight needs out_features divisible by {TILE_ROWS} and in_features "
            f"by {CHUNK}, not {out_features} x {in_features}; store it row-major"
        )


def _nibble_axes(n: int, k: int) -> tuple[int, ...]:
    # codes [n, k] as [band, row, chunk, quarter, nibble m, e]
    return (n // TILE_ROWS, TILE_ROWS, k // CHUNK, 4, 4, 2)


def tile_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Codes [n, k] (row-major, unsigned 4-bit or stored int8) in the tiled order, as a flat
    array of bytes (8-bit) or uint16 words (4-bit)."""
    n, k = codes.shape
    if bits == 8:
        pairs = codes.reshape(n // TILE_ROWS, TILE_ROWS, k // CHUNK, CHUNK // 2, 2)
        return np.ascontiguousarray(pairs.transpose(0, 2, 3, 1, 4)).reshape(-1)
    split = codes.astype(np.uint16).reshape(_nibble_axes(n, k))
    ordered = split.transpose(0, 2, 3, 1, 5, 4)  # band, chunk, quarter, row, e, nibble
    shifts = (np.arange(4, dtype=np.uint16) * 4)[None, None, None, None, None, :]
    return or_along(ordered << shifts, axis=5).reshape(-1)


def untile_codes(flat: np.ndarray, bits: int, n: int, k: int) -> np.ndarray:
    """Inverse of tile_codes: codes [n, k]."""
    if bits == 8:
        pairs = flat.reshape(n // TILE_ROWS, k // CHUNK, CHUNK // 2, TILE_ROWS, 2)
        return np.ascontiguousarray(pairs.transpose(0, 3, 1, 2, 4)).reshape(n, k)
    words = flat.reshape(n // TILE_ROWS, k // CHUNK, 4, TILE_ROWS, 2)
    shifts = (np.arange(4, dtype=np.uint16) * 4)[None, None, None, None, None, :]
    nibbles = (words[..., None] >> shifts) & 0xF  # band, chunk, quarter, row, e, nibble
    return np.ascontiguousarray(nibbles.transpose(0, 3, 1, 2, 5, 4)).reshape(n, k)


def tile_groups(values: np.ndarray) -> np.ndarray:
    """Per-group values [n, groups] in the tiled order (same shape)."""
    n, groups = values.shape
    banded = values.reshape(n // TILE_ROWS, TILE_ROWS, groups).transpose(0, 2, 1)
    return np.ascontiguousarray(banded).reshape(n, groups)


def untile_groups(values: np.ndarray) -> np.ndarray:
    n, groups = values.shape
    banded = values.reshape(n // TILE_ROWS, groups, TILE_ROWS).transpose(0, 2, 1)
    return np.ascontiguousarray(banded).reshape(n, groups)


def group_index(n, group, groups: int):
    """(row, column) of the stored [N, groups] array that holds row n's value of `group`."""
    flat = (n // TILE_ROWS * groups + group) * TILE_ROWS + n % TILE_ROWS
    return flat // groups, flat % groups


def code_offset(n, k, bits: int, in_features: int):
    """Flat offset of row n, feature k's code: a byte (8-bit) or a uint16 word and the bit
    shift of its nibble in that word (4-bit)."""
    band, row, chunk, f = n // TILE_ROWS, n % TILE_ROWS, k // CHUNK, k % CHUNK
    block = band * (in_features // CHUNK) + chunk
    if bits == 8:
        return (block * (CHUNK // 2) + f // 2) * CHUNK + 2 * row + f % 2, None
    word = (block * 4 + f // 8) * CHUNK + 2 * row + f % 2
    return word, (f % 8) // 2 * 4


# The high bits of 5- and 6-bit codes (`high` = 1 or 2 bits a code above the low nibble) in the
# same bands and chunks: per chunk, `high` uint16 words per lane 2r + e, pair p's bits at word
# p * high // 16, shift p * high % 16 (so one word load serves every quarter of a 1-bit chunk,
# half of them of a 2-bit one).
def _high_axes(n: int, k: int, high: int) -> tuple[int, ...]:
    # codes [n, k] as [band, row, chunk, word j, pair within the word, e]
    return (n // TILE_ROWS, TILE_ROWS, k // CHUNK, high, 16 // high, 2)


def tile_high(bits: np.ndarray, high: int) -> np.ndarray:
    """High bits [n, k] (values below 2**high) in the tiled order, as flat uint16 words."""
    n, k = bits.shape
    split = bits.astype(np.uint16).reshape(_high_axes(n, k, high))
    ordered = split.transpose(0, 2, 3, 1, 5, 4)  # band, chunk, word, row, e, pair
    shifts = (np.arange(16 // high, dtype=np.uint16) * high)[None, None, None, None, None, :]
    return or_along(ordered << shifts, axis=5).reshape(-1)


def untile_high(flat: np.ndarray, high: int, n: int, k: int) -> np.ndarray:
    """Inverse of tile_high: high bits [n, k]."""
    words = flat.reshape(n // TILE_ROWS, k // CHUNK, high, TILE_ROWS, 2)
    shifts = (np.arange(16 // high, dtype=np.uint16) * high)[None, None, None, None, None, :]
    parts = (words[..., None] >> shifts) & ((1 << high) - 1)  # band, chunk, word, row, e, pair
    return np.ascontiguousarray(parts.transpose(0, 3, 1, 2, 5, 4)).reshape(n, k)


def high_offset(n, k, high: int, in_features: int):
    """(uint16 word, bit shift) of row n, feature k's high bits in a tiled high plane."""
    band, row, chunk, f = n // TILE_ROWS, n % TILE_ROWS, k // CHUNK, k % CHUNK
    pair = f // 2
    block = (band * (in_features // CHUNK) + chunk) * high + pair * high // 16
    return block * CHUNK + 2 * row + f % 2, pair * high % 16
