"""The code planes of a block format: a code's `low` bits in `qweight`, the rest in `qhigh`.

Row-major, a plane of `width`-bit values keeps row n's value k at bit k * width of the row's
bit string (uint32 words; for 4 bits GroupIntFormat's nibble order). Row-tiled, each plane
takes mlcx.quantization.tiling's banded order for its width (`tile_high`; the 4-bit plane is
tile_codes' nibble order, the same words). A table kind's code indexes int8 values
(`table_value`), read in a kernel from four 32-bit constants without memory loads.
"""

from __future__ import annotations

import numpy as np
from tvm import te, tirx

from mlcx.quantization import tiling
from mlcx.quantization.bit_packing import pack_bits, unpack_bits
from mlcx.quantization.block_kinds import BlockKind


def plane_widths(kind: BlockKind) -> dict[str, int]:
    """Bits a code keeps in each code plane, in parameter order."""
    return {"qweight": kind.low, **({"qhigh": kind.high} if kind.high else {})}


def plane_specs(kind: BlockKind, n: int, k: int) -> dict[str, tuple[tuple[int, int], str]]:
    return {p: ((n, k * w // 32), "uint32") for p, w in plane_widths(kind).items()}


def _tile(values: np.ndarray, width: int) -> np.ndarray:
    return tiling.tile_codes(values, 4) if width == 4 else tiling.tile_high(values, width)


def _untile(flat: np.ndarray, width: int, n: int, k: int) -> np.ndarray:
    if width == 4:
        return tiling.untile_codes(flat, 4, n, k)
    return tiling.untile_high(flat, width, n, k)


def pack_planes(codes: np.ndarray, kind: BlockKind, tiled: bool) -> dict[str, np.ndarray]:
    """Unsigned codes [N, K] -> the code planes."""
    n, k = codes.shape
    codes = codes.astype(np.uint32)
    params, shift = {}, 0
    for plane, width in plane_widths(kind).items():
        values = (codes >> shift) & ((1 << width) - 1)
        if tiled:
            params[plane] = _tile(values, width).view(np.uint32).reshape(n, k * width // 32)
        else:
            params[plane] = pack_bits(values, width)
        shift += width
    return params


def unpack_planes(params: dict[str, np.ndarray], kind: BlockKind, tiled: bool) -> np.ndarray:
    """Inverse of pack_planes: codes [N, K] uint8."""
    n, k = params["qweight"].shape[0], params["qweight"].shape[1] * 32 // kind.low
    codes, shift = np.zeros((n, k), np.uint8), 0
    for plane, width in plane_widths(kind).items():
        words = np.ascontiguousarray(params[plane])
        if tiled:
            values = _untile(words.reshape(-1).view(np.uint16), width, n, k)
        else:
            values = unpack_bits(words, width)
        codes |= values.astype(np.uint8) << shift
        shift += width
    return codes


def code_expr(params: dict[str, te.Tensor], kind: BlockKind, tiled: bool, n, k) -> tirx.PrimExpr:
    """The unsigned code (uint32) of row n, feature k."""
    code, shift = None, 0
    for plane, width in plane_widths(kind).items():
        words = params[plane]
        mask = tirx.const((1 << width) - 1, "uint32")
        if tiled:
            word, at = tiling.high_offset(n, k, width, int(words.shape[1]) * 32 // width)
            value = _u16_bits(words, word, at, width)
        else:
            bit = k * width
            value = (words[n, bit // 32] >> (bit % 32).astype("uint32")) & mask
        value = value << tirx.const(shift, "uint32") if shift else value
        code = value if code is None else code | value
        shift += width
    return code


def table_words(table: tuple[int, ...]) -> list[int]:
    """The 16 int8 values as four little-endian int32 words (entry q: byte q % 4 of word q // 4)."""
    raw = np.array(table, np.int8).view(np.uint8).reshape(4, 4).astype(np.uint32)
    words = (raw << (8 * np.arange(4, dtype=np.uint32))).sum(axis=1).astype(np.uint32)
    return [int(w) for w in words.view(np.int32)]


def table_value(code, table: tuple[int, ...]) -> tirx.PrimExpr:
    """table[code] (int32) for a uint32 code below 16: the word by two bits, the byte by a shift."""
    w0, w1, w2, w3 = (tirx.const(w, "int32") for w in table_words(table))
    bit = lambda b: (code & tirx.const(b, "uint32")) != tirx.const(0, "uint32")  # noqa: E731
    word = tirx.Select(bit(8), tirx.Select(bit(4), w3, w2), tirx.Select(bit(4), w1, w0))
    up = (tirx.const(3, "uint32") - (code & tirx.const(3, "uint32"))) * tirx.const(8, "uint32")
    return (word << up.astype("int32")) >> tirx.const(24, "int32")


def _u16_bits(words: te.Tensor, word, shift, width: int) -> tirx.PrimExpr:
    """`width` bits at `shift` of uint16 word `word` of a uint32 plane [rows, cols]."""
    cols = int(words.shape[1])
    stored = words[word // 2 // cols, word // 2 % cols]
    bits = (word % 2 * 16 + shift).astype("uint32")
    return (stored >> bits) & tirx.const((1 << width) - 1, "uint32")
