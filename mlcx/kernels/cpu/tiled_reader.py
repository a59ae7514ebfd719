"""How the CPU kernels read row-tiled weights (mlcx.quantization.tiling): 16 rows a vector."""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import block_reader, mxfp4_reader, vec
from mlcx.kernels.cpu.weights import CHUNK
from mlcx.quantization.formats import GroupIntFormat
from mlcx.quantization.tiling import TILE_ROWS

ROWS = TILE_ROWS  # output rows in one vector
PAIRS = CHUNK // 2  # feature pairs of one chunk
WORDS = 2 * ROWS  # uint16 words (4-bit) or bytes (8-bit) holding one pair of all rows
LINE_BYTES = 64


def supports(fmt) -> bool:
    """Whether the tiled kernels read `fmt` (group formats here, block formats through
    mlcx.kernels.cpu.block_reader, MXFP4 through mlcx.kernels.cpu.mxfp4_reader)."""
    return _group_supported(fmt) or block_reader.supports(fmt) or mxfp4_reader.supports(fmt)


def _group_supported(fmt) -> bool:
    return (
        isinstance(fmt, GroupIntFormat)
        and fmt.tiled
        and fmt.group_size % CHUNK == 0
        and (fmt.bits == 4 or not fmt.affine)
    )


def reader_for(fmt, cfg=None):
    """The reader of a tiled format: TiledReader, BlockTiledReader or Mxfp4TiledReader (the
    last two look table codes up with the byte shuffle of cfg, a KernelConfig)."""
    shuffle = cfg.byte_table if cfg is not None else ""
    if mxfp4_reader.supports(fmt):
        return mxfp4_reader.Mxfp4TiledReader(fmt, shuffle)
    if block_reader.supports(fmt):
        return block_reader.BlockTiledReader(fmt, shuffle)
    return TiledReader(fmt)


@dataclass(frozen=True)
class TiledReader:
    fmt: GroupIntFormat

    def __post_init__(self) -> None:
        if not _group_supported(self.fmt):
            raise ValueError(f"the tiled CPU kernels do not read weight format {self.fmt.name}")

    @property
    def has_offset(self) -> bool:
        return self.fmt.bits == 4

    @property
    def subs(self) -> int:
        """Scale groups in one chunk (a group spans whole chunks here)."""
        return 1

    half_offsets = False  # one offset a chunk

    def views(self, bufs, n: int, k: int) -> dict:
        """The parameter buffers re-declared in tile order: codes by (band, chunk, pair
        group) and per-group values by (band, group), 16 rows a row."""
        bands, chunks, groups = n // ROWS, k // CHUNK, k // self.fmt.group_size
        data = bufs["qweight"].data
        if self.fmt.bits == 4:
            codes = T.decl_buffer((bands * chunks * 4, WORDS), "uint16", data=data)
        else:
            codes = T.decl_buffer((bands * chunks * PAIRS, WORDS), "int8", data=data)
        views = {"bufs": bufs, "codes": codes, "chunks": chunks, "groups": groups}
        for plane in ("scales", "mins"):
            if plane in bufs:
                views[plane] = T.decl_buffer(
                    (bands * groups, ROWS), self.fmt.scale_dtype, data=bufs[plane].data
                )
        return views

    def quarter_planes(self, views, band, chunk, quarter) -> list:
        """int16 x 32 for pairs 4 * quarter .. + 3 of `chunk`: lanes 2r, 2r + 1 = row r's codes."""
        block = band * views["chunks"] + chunk
        codes = views["codes"]
        if self.fmt.bits == 8:
            first = block * PAIRS + quarter * 4
            return [
                T.Cast(f"int16x{WORDS}", codes[first + m, vec.ramp(0, WORDS)]) for m in range(4)
            ]
        words = T.bind(codes[block * 4 + quarter, vec.ramp(0, WORDS)])
        return [
            T.Cast(
                f"int16x{WORDS}",
                (words >> vec.splat(tirx.const(4 * m, "uint16"), WORDS))
                & vec.splat(tirx.const(15, "uint16"), WORDS),
            )
            for m in range(4)
        ]

    @property
    def quads(self) -> bool:
        """Whether quarter_quads serves this format (4-bit codes: unsigned bytes below 16)."""
        return self.fmt.bits == 4

    def quarter_quads(self, views, band, chunk, quarter) -> list:
        """The same quarter as 2 planes of 64 unsigned bytes (as int8 x 64): bytes 4r .. 4r + 3
        are row r's codes of the quarter's features (0, 4, 1, 5), then (2, 6, 3, 7)."""
        block = band * views["chunks"] + chunk
        return vec.nibble_bytes(views["codes"][block * 4 + quarter, vec.ramp(0, WORDS)], WORDS)

    def prefetch_quarter(self, views, band, chunk, quarter, ahead_bytes: int) -> None:
        """Hint the cache lines `ahead_bytes` past this quarter's codes into L1."""
        codes = views["codes"]
        row_bytes = WORDS * (2 if self.fmt.bits == 4 else 1)
        per_quarter = 1 if self.fmt.bits == 4 else 4  # code rows one quarter reads
        first = (band * views["chunks"] + chunk) * (4 * per_quarter) + quarter * per_quarter
        for line in range(0, per_quarter * row_bytes, LINE_BYTES):
            vec.prefetch(codes, [first + (ahead_bytes + line) // row_bytes, 0])

    def _group_row(self, views, band, chunk):
        return band * views["groups"] + chunk * CHUNK // self.fmt.group_size

    def scales(self, views, band, chunk, sub: int = 0) -> tirx.PrimExpr:
        return vec.to_f32(views["scales"][self._group_row(views, band, chunk), vec.ramp(0, ROWS)])

    def offsets(self, views, band, chunk, sub: int = 0) -> tirx.PrimExpr:
        """Added once per feature: the group minimums, or -zero_point * scale."""
        if self.fmt.affine:
            row = self._group_row(views, band, chunk)
            return vec.to_f32(views["mins"][row, vec.ramp(0, ROWS)])
        return vec.splat(vec.f32(-self.fmt.zero_point), ROWS) * self.scales(views, band, chunk)
