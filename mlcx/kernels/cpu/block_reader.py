"""How the row-tiled CPU kernels read the 5-bit, K-quant and IQ4 formats (BlockFormat, tiled).

The low bits of the codes sit in a tiled plane of their width (mlcx.quantization.tiling; four
bits: the 4-bit order, so a quarter of a chunk unpacks as for Q4_0; Q2_K / Q3_K: two bits);
the high bits of Q3_K, 5- and 6-bit codes come from a second plane in the same bands and
chunks (one uint16 word per lane serves a whole 1-bit chunk, half a 2-bit one) and are
shifted in above them (mlcx.kernels.cpu.block_codes). IQ4 codes are looked up in ggml's
value table. Per sub-block, the scale applied to the int32 dot products is the super-block
d times the sub-block's integer scale (Q5_0 / Q5_1 / IQ4_NL: the f16 scale), and the offset
times the activations' sum is -dmin * mn (the minimum; Q5_0: -16 * scale). Q6_K, Q3_K and
Q2_K scale every 16 weights, so a chunk keeps two dot products (`subs`); signed kinds (Q6_K,
Q3_K; IQ4's table values) are centred before the multiply, which leaves no offset, and Q2_K's
minimums multiply the sums of half chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import block_codes, vec
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.quantization.block_formats import SUPER, BlockFormat
from mlcx.quantization.tiling import TILE_ROWS

ROWS = TILE_ROWS
WORDS = 2 * ROWS
LINE_BYTES = 64


def supports(fmt) -> bool:
    return isinstance(fmt, BlockFormat) and fmt.tiled


@dataclass(frozen=True)
class BlockTiledReader:
    fmt: BlockFormat
    shuffle: str = ""  # the target's byte shuffle (KernelConfig.byte_table), for table kinds

    def __post_init__(self) -> None:
        if not supports(self.fmt):
            raise ValueError(f"the tiled CPU kernels do not read weight format {self.fmt.name}")

    @property
    def subs(self) -> int:
        """Scale groups in one 32-feature chunk."""
        return CHUNK // self.fmt.group_size

    @property
    def has_offset(self) -> bool:
        return self.fmt.affine or (self.subs == 1 and not self.fmt.table)

    @property
    def half_offsets(self) -> bool:
        """Whether each half chunk has its own offset (Q2_K): int16 rows keep half sums."""
        return self.has_offset and self.subs > 1

    @property
    def quads(self) -> bool:
        """Whether quarter_quads serves this format: one scale a chunk, or two."""
        return self.subs in (1, 2)

    @property
    def signed_codes(self) -> bool:
        return not self.has_offset

    @property
    def quad_zero(self) -> int:
        """What the byte planes of a signed kind add to each weight (its sum offsets it)."""
        return block_codes.TABLE_BIAS if self.fmt.table else self.fmt.zero_point

    def _words(self, views, plane: str, width: int, band, chunk, quarter):
        """The quarter's words of a code plane, its pair m at bit width * m."""
        block = band * views["chunks"] + chunk
        row = block * width + quarter * 4 * width // 16
        shift = 0 if width == 4 else quarter * 4 * width % 16
        return block_codes.plane_words(views[plane], row, shift)

    def _quarter(self, views, band, chunk, quarter):
        low = self._words(views, "codes", self.fmt.low, band, chunk, quarter)
        if not self.fmt.high:
            return low, None
        return low, self._words(views, "high", self.fmt.high, band, chunk, quarter)

    def quarter_planes(self, views, band, chunk, quarter) -> list:
        """int16 x 32 for pairs 4 * quarter .. + 3 of `chunk`: lanes 2r, 2r + 1 = row r's codes."""
        low, high = self._quarter(views, band, chunk, quarter)
        if self.fmt.table:
            return block_codes.table_pairs(low, self.fmt.table, self.shuffle)
        return block_codes.pair_planes(low, high, self.fmt, self.signed_codes)

    def quarter_quads(self, views, band, chunk, quarter) -> list:
        """The quarter's unsigned codes as 2 planes of bytes in TiledReader.quarter_quads'
        order (table kinds: their values plus quad_zero)."""
        low, high = self._quarter(views, band, chunk, quarter)
        if self.fmt.table:
            return block_codes.table_quads(low, self.fmt.table, self.shuffle)
        return block_codes.quad_planes(low, high, self.fmt)

    def views(self, bufs, n: int, k: int) -> dict:
        bands, chunks = n // ROWS, k // CHUNK
        views = {"bufs": bufs, "chunks": chunks}
        views["codes"] = T.decl_buffer(
            (bands * chunks * self.fmt.low, WORDS), "uint16", data=bufs["qweight"].data
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

    def prefetch_quarter(self, views, band, chunk, quarter, ahead_bytes: int) -> None:
        """Hint the cache lines `ahead_bytes` past this quarter's codes into L1."""
        block = band * views["chunks"] + chunk
        for view, width in (("codes", self.fmt.low), ("high", self.fmt.high)):
            if width:
                row = block * width + quarter * width // 4
                vec.prefetch(views[view], [row + ahead_bytes * width // 4 // (2 * WORDS), 0])

    def _raw(self, views, plane: str, band, index):
        groups, buf = views[plane]
        return buf[band * groups + index, vec.ramp(0, ROWS)]

    def _plane(self, views, plane: str, band, index):
        return vec.to_f32(self._raw(views, plane, band, index))

    def _nibble(self, views, band, group, high: bool):
        """Q2_K's sub-block scale (low nibble) or minimum (high nibble) of `group`."""
        byte = self._raw(views, "scm", band, group)
        four = vec.splat(tirx.const(4 if high else 15, "uint8"), ROWS)
        return vec.to_f32(byte >> four if high else byte & four)

    def scales(self, views, band, chunk, sub: int = 0) -> tirx.PrimExpr:
        """float32 x 16: the scale of sub-block `sub` of `chunk` for the band's 16 rows."""
        group = chunk * self.subs + sub
        if not self.fmt.spec.super_block:
            return self._plane(views, "scales", band, group)
        d = self._plane(views, "d", band, chunk * CHUNK // SUPER)
        if self.fmt.spec.packed:
            return d * self._nibble(views, band, group, False)
        return d * self._plane(views, "sc", band, group)

    def offsets(self, views, band, chunk, sub: int = 0) -> tirx.PrimExpr:
        """Added once per feature of the sub-block: the minimum, or -zero_point * scale."""
        if not self.fmt.affine:
            zero = vec.splat(vec.f32(-self.fmt.zero_point), ROWS)
            return zero * self.scales(views, band, chunk, sub)
        if not self.fmt.spec.super_block:
            return self._plane(views, "mins", band, chunk)
        dmin = self._plane(views, "dmin", band, chunk * CHUNK // SUPER)
        if self.fmt.spec.packed:
            return -(dmin * self._nibble(views, band, chunk * self.subs + sub, True))
        return -(dmin * self._plane(views, "mn", band, chunk))
