"""How the row-tiled CPU kernels read the 5-bit and K-quant formats (BlockFormat, tiled).

The low nibbles sit in the 4-bit tiled order (mlcx.quantization.tiling), so a quarter of a
chunk unpacks as for Q4_0; the high bits of 5- and 6-bit codes come from a second plane in
the same bands and chunks (one uint16 word per lane serves a whole 1-bit chunk, half a 2-bit
one) and are shifted in above the nibble. Per 32-weight sub-block, the scale applied to the
int32 dot products is the super-block d times the sub-block's integer scale (Q5_0 / Q5_1:
the f16 scale), and the offset times the activations' sum is -dmin * mn (the minimum; Q5_0:
-16 * scale). Q6_K scales every 16 weights, so a chunk keeps two dot products (`subs`), and
its codes are centred (q - 32) before the multiply, which leaves no offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.quantization.block_formats import SUPER, BlockFormat
from mlcx.quantization.tiling import TILE_ROWS

ROWS = TILE_ROWS
WORDS = 2 * ROWS
LINE_BYTES = 64


def supports(fmt) -> bool:
    return isinstance(fmt, BlockFormat) and fmt.tiled


def _u16(value: int, lanes: int = WORDS):
    return vec.splat(tirx.const(value, "uint16"), lanes)


def _high(top, pairs, high: int):
    """uint32 x 16: the high bits of `pairs` (top: pair m's at bit high * m of each 16-bit
    half) at bit 4 of bytes (0, 1) and (2, 3): the byte order of vec.nibble_bytes' planes."""
    bits = vec.splat(tirx.const(0, "uint32"), ROWS)
    for i, m in enumerate(pairs):
        shift = 8 * i + 4 - high * m  # each selected target bit has exactly one source bit
        mask = (((1 << high) - 1) << (8 * i + 4)) * 0x00010001
        moved = top << vec.splat(tirx.const(shift, "uint32"), ROWS)
        bits = bits | (moved & vec.splat(tirx.const(mask, "uint32"), ROWS))
    return bits


@dataclass(frozen=True)
class BlockTiledReader:
    fmt: BlockFormat

    def __post_init__(self) -> None:
        if not supports(self.fmt):
            raise ValueError(f"the tiled CPU kernels do not read weight format {self.fmt.name}")

    @property
    def subs(self) -> int:
        """Scale groups in one 32-feature chunk."""
        return CHUNK // self.fmt.group_size

    @property
    def has_offset(self) -> bool:
        return self.fmt.affine or self.subs == 1

    @property
    def quads(self) -> bool:
        """Whether quarter_quads serves this format: one scale a chunk, or Q6_K's two."""
        return self.subs in (1, 2)

    def quarter_quads(self, views, band, chunk, quarter) -> list:
        """The quarter's unsigned codes as 2 planes of bytes in TiledReader.quarter_quads'
        order (the low nibbles sit in the same order), high bits moved to bit 4 of each byte."""
        block = band * views["chunks"] + chunk
        planes = vec.nibble_bytes(views["codes"][block * 4 + quarter, vec.ramp(0, WORDS)], WORDS)
        high = self.fmt.high
        if not high:
            return planes
        row = block * high + (quarter * 4 * high) // 16
        top = views["high"][row, vec.ramp(0, WORDS)]
        top = top >> vec.splat(T.Cast("uint16", quarter * 4 * high % 16), WORDS)
        top = T.bind(T.reinterpret(f"uint32x{ROWS}", top))  # lane r: words 2r (low), 2r + 1
        return [
            T.reinterpret(
                f"int8x{4 * ROWS}", T.reinterpret(f"uint32x{ROWS}", p) | _high(top, ms, high)
            )
            for p, ms in zip(planes, ((0, 2), (1, 3)), strict=True)
        ]

    @property
    def signed_codes(self) -> bool:
        return not self.has_offset

    def views(self, bufs, n: int, k: int) -> dict:
        bands, chunks = n // ROWS, k // CHUNK
        views = {"bufs": bufs, "chunks": chunks}
        views["codes"] = T.decl_buffer(
            (bands * chunks * 4, WORDS), "uint16", data=bufs["qweight"].data
        )
        if self.fmt.high:
            rows = bands * chunks * self.fmt.high
            views["high"] = T.decl_buffer((rows, WORDS), "uint16", data=bufs["qhigh"].data)
        for plane in self.fmt.group_planes:
            groups = int(bufs[plane].shape[1])  # per row; the tiled plane holds 16 rows a row
            views[plane] = (
                groups,
                T.decl_buffer((bands * groups, ROWS), bufs[plane].dtype, data=bufs[plane].data),
            )
        return views

    def quarter_planes(self, views, band, chunk, quarter) -> list:
        """int16 x 32 for pairs 4 * quarter .. + 3 of `chunk`: lanes 2r, 2r + 1 = row r's codes."""
        block = band * views["chunks"] + chunk
        words = T.bind(views["codes"][block * 4 + quarter, vec.ramp(0, WORDS)])
        high = self.fmt.high
        if high:
            row = block * high + (quarter * 4 * high) // 16
            # this quarter's bits at the bottom: plane m's at bits high * m
            top = views["high"][row, vec.ramp(0, WORDS)]
            top = T.bind(top >> vec.splat(T.Cast("uint16", quarter * 4 * high % 16), WORDS))
            mask = _u16(((1 << high) - 1) << 4)
        planes = []
        for m in range(4):
            code = (words >> _u16(4 * m)) & _u16(15)
            if high:  # plane m's high bits moved to bit 4 with constant shifts
                at = high * m
                moved = top << _u16(4 - at) if at <= 4 else top >> _u16(at - 4)
                code = code | (moved & mask)
            code = T.Cast(f"int16x{WORDS}", code)
            if self.signed_codes:
                code = code - vec.splat(tirx.const(self.fmt.zero_point, "int16"), WORDS)
            planes.append(code)
        return planes

    def prefetch_quarter(self, views, band, chunk, quarter, ahead_bytes: int) -> None:
        """Hint the cache lines `ahead_bytes` past this quarter's codes into L1."""
        block = band * views["chunks"] + chunk
        vec.prefetch(views["codes"], [block * 4 + quarter + ahead_bytes // (2 * WORDS), 0])
        if self.fmt.high:
            ahead = ahead_bytes * self.fmt.high // 4 // (2 * WORDS)
            vec.prefetch(views["high"], [block * self.fmt.high + ahead, 0])

    def _plane(self, views, plane: str, band, index):
        groups, buf = views[plane]
        return vec.to_f32(buf[band * groups + index, vec.ramp(0, ROWS)])

    def scales(self, views, band, chunk, sub: int = 0) -> tirx.PrimExpr:
        """float32 x 16: the scale of sub-block `sub` of `chunk` for the band's 16 rows."""
        group = chunk * self.subs + sub
        if not self.fmt.spec.super_block:
            return self._plane(views, "scales", band, group)
        d = self._plane(views, "d", band, chunk * CHUNK // SUPER)
        return d * self._plane(views, "sc", band, group)

    def offsets(self, views, band, chunk) -> tirx.PrimExpr:
        """Added once per feature of the chunk: the minimum, or -zero_point * scale."""
        if not self.fmt.affine:
            return vec.splat(vec.f32(-self.fmt.zero_point), ROWS) * self.scales(views, band, chunk)
        if not self.fmt.spec.super_block:
            return self._plane(views, "mins", band, chunk)
        dmin = self._plane(views, "dmin", band, chunk * CHUNK // SUPER)
        return -(dmin * self._plane(views, "mn", band, chunk))
