"""A quarter chunk's codes out of a block format's tiled planes, as the row-tiled kernels use
them: 4 int16 planes (pairs 4q + m, lanes 2r + e) or 2 planes of bytes in the int8 kernels'
order (row r's features (0, 4, 1, 5), then (2, 6, 3, 7) of the quarter).

`words` (uint16 x 32, lane 2r + e) holds the quarter's pair m at bit width * m of a plane of
`width`-bit values (mlcx.quantization.tiling: a 4-bit plane's quarter is a whole word row,
a 2-bit one's half a row, a 1-bit one's a quarter). High bits move above the low ones with
constant shifts; table kinds (IQ4) look their nibbles up with mlcx.kernels.cpu.byte_table,
signed for the int16 planes, plus 128 for the byte planes (vpdpbusd's unsigned operand).
"""

from __future__ import annotations

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.byte_table import lookup16
from mlcx.quantization.tiling import TILE_ROWS

ROWS = TILE_ROWS
WORDS = 2 * ROWS
QUAD_PAIRS = ((0, 2), (1, 3))  # the pairs of each byte plane, bytes (0, 1) and (2, 3)
TABLE_BIAS = 128  # added to a table value in the byte planes


def u16(value: int, lanes: int = WORDS):
    return vec.splat(tirx.const(value, "uint16"), lanes)


def _shifted(value, shift: int, dtype: str, lanes: int):
    if shift == 0:
        return value
    amount = vec.splat(tirx.const(abs(shift), dtype), lanes)
    return value << amount if shift > 0 else value >> amount


def plane_words(view, row, shift):
    """uint16 x 32 of `view` row `row`, shifted right by `shift` bits (0 when a static 0)."""
    words = view[row, vec.ramp(0, WORDS)]
    if isinstance(shift, int) and shift == 0:
        return T.bind(words)
    return T.bind(words >> vec.splat(T.Cast("uint16", shift), WORDS))


def pair_planes(low, high, fmt, centred: bool) -> list:
    """The 4 int16 planes of a quarter from its low words and high words (None: no high
    bits); `centred`: code - zero_point."""
    planes = []
    for m in range(4):
        code = _shifted(low, -fmt.low * m, "uint16", WORDS) & u16((1 << fmt.low) - 1)
        if high is not None:
            moved = _shifted(high, fmt.low - fmt.high * m, "uint16", WORDS)
            code = code | (moved & u16(((1 << fmt.high) - 1) << fmt.low))
        code = T.Cast(f"int16x{WORDS}", code)
        if centred:
            code = code - vec.splat(tirx.const(fmt.zero_point, "int16"), WORDS)
        planes.append(code)
    return planes


def _place(top, pairs, width: int, at: int):
    """uint32 x 16 (lane r = words 2r, 2r + 1): pair pairs[i]'s `width` bits (at bit
    width * m of each 16-bit half) moved to bit `at` of bytes i and 2 + i."""
    out = None
    for i, m in enumerate(pairs):
        mask = (((1 << width) - 1) << (8 * i + at)) * 0x00010001
        moved = _shifted(top, 8 * i + at - width * m, "uint32", ROWS)
        part = moved & vec.splat(tirx.const(mask, "uint32"), ROWS)
        out = part if out is None else out | part
    return out


def quad_planes(low, high, fmt) -> list:
    """The 2 byte planes (int8 x 64 holding unsigned codes) of a quarter."""
    if fmt.low == 4:
        planes = [T.reinterpret(f"uint32x{ROWS}", p) for p in vec.nibble_bytes(low, WORDS)]
    else:
        low32 = T.bind(T.reinterpret(f"uint32x{ROWS}", low))
        planes = [_place(low32, pairs, fmt.low, 0) for pairs in QUAD_PAIRS]
    if high is not None:
        high32 = T.bind(T.reinterpret(f"uint32x{ROWS}", high))
        above = [_place(high32, pairs, fmt.high, fmt.low) for pairs in QUAD_PAIRS]
        planes = [p | a for p, a in zip(planes, above, strict=True)]
    return [T.reinterpret(f"int8x{4 * ROWS}", p) for p in planes]


def _biased(table: tuple[int, ...]) -> tuple[int, ...]:
    """The table plus TABLE_BIAS, as int8 bit patterns of the unsigned bytes."""
    return tuple((v + TABLE_BIAS + 128) % 256 - 128 for v in table)


def table_quads(words, table: tuple[int, ...], shuffle: str) -> list:
    """The 2 byte planes of a table kind: table[code] + 128 as unsigned bytes."""
    planes = vec.nibble_bytes(words, WORDS)
    return [T.bind(lookup16(_biased(table), p, 4 * ROWS, shuffle)) for p in planes]


def table_pairs(words, table: tuple[int, ...], shuffle: str) -> list:
    """The 4 int16 planes of a table kind: table[code], sign-extended from its byte. Byte plane
    j's int16 lane 2r + e holds pair j (low byte) and pair j + 2 (high byte)."""
    eight = vec.splat(tirx.const(8, "int16"), WORDS)
    evens, odds = [], []
    for plane in vec.nibble_bytes(words, WORDS):
        values = T.bind(T.reinterpret(f"int16x{WORDS}", lookup16(table, plane, 4 * ROWS, shuffle)))
        evens.append((values << eight) >> eight)
        odds.append(values >> eight)
    return evens + odds
