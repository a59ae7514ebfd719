"""How the row-tiled kernels multiply weight codes by activation codes: int16 pairs or int8 quads.

A quarter of a chunk is 8 input features of 16 output rows. PairDots (int16 activations, two
features a 32-bit word) unpacks it into 4 int16 planes, each multiplied by one broadcast pair
(`vpdpwssd` on VNNI hosts). QuadDots (int8 activations, four features a word) unpacks the same
4-bit words into 2 planes of unsigned bytes and multiplies each by one broadcast quad
(`vpdpbusd`: twice the products per instruction, half the unpacking). Those planes hold the
quarter's features in the order (0, 4, 1, 5), (2, 6, 3, 7), the nibble order of
mlcx.quantization.tiling, so the activations are quantized in that order (QUAD_ORDER) and no
weight moves.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.tiled_reader import ROWS
from mlcx.kernels.cpu.weights import CHUNK

QUAD_ORDER = [8 * q + f for q in range(CHUNK // 8) for f in (0, 4, 1, 5, 2, 6, 3, 7)]


@dataclass(frozen=True)
class PairDots:
    bits: int = 16
    words_per_chunk: int = CHUNK // 2
    order: tuple[int, ...] = tuple(range(CHUNK))

    def planes(self, reader, views, band, chunk, quarter) -> list:
        return reader.quarter_planes(views, band, chunk, quarter)

    def offsets(self, reader, views, band, chunk, scales) -> list:
        """Per scale group of the chunk: what multiplies the activations' sum (None: nothing).
        Signed codes (Q6_K, Q3_K, IQ4) were centred in the planes already."""
        if not reader.has_offset:
            return [None] * len(scales)
        return [reader.offsets(views, band, chunk, s) for s in range(len(scales))]

    def accumulate(self, acc, plane, word):
        x = vec.splat(word, ROWS)
        return acc + vec.madd_i16(plane, T.reinterpret(f"int16x{2 * ROWS}", x), 2 * ROWS)


@dataclass(frozen=True)
class QuadDots:
    bits: int = 8
    words_per_chunk: int = CHUNK // 4
    order: tuple[int, ...] = tuple(QUAD_ORDER)

    def planes(self, reader, views, band, chunk, quarter) -> list:
        return reader.quarter_quads(views, band, chunk, quarter)

    def offsets(self, reader, views, band, chunk, scales) -> list:
        """Per scale group of the chunk: what multiplies the activations' sum. The byte planes
        hold unsigned codes, so signed ones (Q6_K: code - 32 per half chunk; IQ4: table value
        + 128) subtract here."""
        if reader.has_offset:
            return [reader.offsets(views, band, chunk, s) for s in range(len(scales))]
        zero = vec.splat(vec.f32(-reader.quad_zero), ROWS)
        return [zero * s for s in scales]

    def accumulate(self, acc, plane, word):
        x = T.reinterpret(f"int8x{4 * ROWS}", vec.splat(word, ROWS))
        return vec.dot_u8s8(acc, plane, x)


def dots_for(reader, int8: bool) -> PairDots | QuadDots:
    """QuadDots where int8 activations were asked for and the reader unpacks quads."""
    return QuadDots() if int8 and reader.quads else PairDots()
