"""How the row-tiled CPU kernels read MXFP4 (Mxfp4Format, tiled).

The E2M1 codes sit in the 4-bit tiled order (mlcx.quantization.tiling), so a quarter of a
chunk splits into two planes of bytes as Q4_0's does (vec.nibble_bytes); a 16-byte table
lookup (mlcx.kernels.cpu.byte_table: one pshufb / tbl per register) turns each code into its
E2M1 value doubled, shifted by ZERO to 0 .. 24, so that the bytes are unsigned: the int8
kernels' u8 operand as they are, the int16 kernels' planes after a mask or shift per plane.
A chunk (32 weights) is one MXFP4 block: its int32 dot products are scaled by the block's
power of two 2 ** (e - 128) (built from the exponent's bits), and the shift comes back as an
offset of -ZERO times that scale per feature, as Q4_0's zero point does.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.byte_table import lookup16
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.quantization.mxfp4 import E2M1_TWICE, Mxfp4Format
from mlcx.quantization.tiling import TILE_ROWS

ROWS = TILE_ROWS
WORDS = 2 * ROWS
LINE_BYTES = 64
ZERO = 12  # the largest |E2M1 value doubled|: codes + ZERO are unsigned bytes
TABLE = tuple(v + ZERO for v in E2M1_TWICE)


def supports(fmt) -> bool:
    return isinstance(fmt, Mxfp4Format) and fmt.tiled


def _u(value: int, dtype: str, lanes: int):
    return vec.splat(tirx.const(value, dtype), lanes)


def e8m0_scales(e) -> tirx.PrimExpr:
    """float32 x 16: 2 ** (e - 128) of 16 E8M0 bytes (uint8 x 16), from the exponent bits."""
    e = T.bind(T.Cast(f"uint32x{ROWS}", e))
    small = _u(0x00200000, "uint32", ROWS) << (e & _u(1, "uint32", ROWS))
    normal = (e - _u(1, "uint32", ROWS)) << _u(23, "uint32", ROWS)
    bits = T.Select(e < _u(2, "uint32", ROWS), small, normal)
    return T.reinterpret(f"float32x{ROWS}", bits)


@dataclass(frozen=True)
class Mxfp4TiledReader:
    fmt: Mxfp4Format
    shuffle: str = ""  # the target's byte shuffle (KernelConfig.byte_table)

    subs = 1  # one block, one scale, per chunk
    has_offset = True
    half_offsets = False
    quads = True
    signed_codes = False

    def __post_init__(self) -> None:
        if not supports(self.fmt):
            raise ValueError(f"the tiled CPU kernels do not read weight format {self.fmt.name}")

    def views(self, bufs, n: int, k: int) -> dict:
        bands, chunks = n // ROWS, k // CHUNK
        codes = T.decl_buffer((bands * chunks * 4, WORDS), "uint16", data=bufs["qweight"].data)
        data = bufs["exponents"].data
        exponents = T.decl_buffer((bands * chunks, ROWS), "uint8", data=data)
        return {"bufs": bufs, "chunks": chunks, "codes": codes, "exponents": exponents}

    def quarter_quads(self, views, band, chunk, quarter) -> list:
        """The quarter's values + ZERO as 2 planes of 64 bytes in TiledReader.quarter_quads'
        order (the codes' own order: the lookup moves no byte)."""
        block = band * views["chunks"] + chunk
        planes = vec.nibble_bytes(views["codes"][block * 4 + quarter, vec.ramp(0, WORDS)], WORDS)
        return [T.bind(lookup16(TABLE, p, 2 * WORDS, self.shuffle)) for p in planes]

    def quarter_planes(self, views, band, chunk, quarter) -> list:
        """int16 x 32 for pairs 4 * quarter .. + 3: byte 2w (2w + 1) of the low-nibble plane is
        nibble 0 (2) of word w, of the high-nibble plane nibble 1 (3)."""
        low, high = (
            T.reinterpret(f"uint16x{WORDS}", p)
            for p in self.quarter_quads(views, band, chunk, quarter)
        )
        byte, eight = _u(0xFF, "uint16", WORDS), _u(8, "uint16", WORDS)
        planes = [low & byte, high & byte, low >> eight, high >> eight]
        return [T.Cast(f"int16x{WORDS}", p) for p in planes]

    def prefetch_quarter(self, views, band, chunk, quarter, ahead_bytes: int) -> None:
        block = band * views["chunks"] + chunk
        vec.prefetch(views["codes"], [block * 4 + quarter + ahead_bytes // (2 * WORDS), 0])

    def scales(self, views, band, chunk, sub: int = 0) -> tirx.PrimExpr:
        """float32 x 16: the block scale of `chunk` for the band's 16 rows."""
        return e8m0_scales(views["exponents"][band * views["chunks"] + chunk, vec.ramp(0, ROWS)])

    def offsets(self, views, band, chunk, sub: int = 0) -> tirx.PrimExpr:
        return vec.splat(vec.f32(-ZERO), ROWS) * self.scales(views, band, chunk)
