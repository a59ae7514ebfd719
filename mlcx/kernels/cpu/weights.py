"""How the CPU kernels read each quantized weight format, 32 input features (a chunk) at a time.

A reader turns the stored planes of `GroupIntFormat` (see mlcx.quantization.formats)
into int16 codes plus a float scale and offset per chunk, so that for one output row

    sum_k x[k] * w[k] = sum_chunks scale * (x_chunk . codes) + offset * sum(x_chunk)

The codes of a chunk come out in the reader's lane order; the activations are quantized in
the same order, so no shuffles run in the inner loop. The formats are read in place: no
weight is repacked in the artifact.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.kernels.cpu import vec
from mlcx.quantization.formats import GroupIntFormat

CHUNK = 32
NATURAL = list(range(CHUNK))
# Byte j of a 4-bit chunk holds features 2j (low nibble) and 2j + 1 (high nibble).
EVEN_ODD = list(range(0, CHUNK, 2)) + list(range(1, CHUNK, 2))


@dataclass(frozen=True)
class QuantReader:
    """Reads one GroupIntFormat; `bits` picks the code layout."""

    fmt: GroupIntFormat

    def __post_init__(self) -> None:
        if not supports(self.fmt):
            raise ValueError(f"the CPU kernels do not read weight format {self.fmt.name}")

    @property
    def lane_order(self) -> list[int]:
        return EVEN_ODD if self.fmt.bits == 4 else NATURAL

    @property
    def has_offset(self) -> bool:
        # 8-bit codes are stored already centred (signed int8): no offset.
        return self.fmt.bits == 4

    @property
    def chunk_bytes(self) -> int:
        """Bytes of codes per chunk in the code view."""
        return CHUNK * self.fmt.bits // 8

    def code_view(self, planes: dict[str, tirx.Buffer], n: int, k: int) -> tirx.Buffer:
        """The qweight plane as bytes: uint8 [n, k/2] (two codes a byte) or int8 [n, k]."""
        qweight = planes["qweight"]
        if self.fmt.bits == 8:
            return qweight
        return T.decl_buffer((n, k // 2), "uint8", data=qweight.data)

    def codes(self, view: tirx.Buffer, row, chunk) -> tirx.PrimExpr:
        """int16 x 32: the chunk's codes in `lane_order`."""
        if self.fmt.bits == 8:
            return T.Cast("int16x32", view[row, vec.ramp(chunk * CHUNK, CHUNK)])
        raw = T.bind(view[row, vec.ramp(chunk * (CHUNK // 2), CHUNK // 2)])
        low = T.Cast("int16x16", raw & vec.splat(tirx.const(15, "uint8"), 16))
        high = T.Cast("int16x16", raw >> vec.splat(tirx.const(4, "uint8"), 16))
        return vec.concat(low, high, 16)

    def pair(self, view: tirx.Buffer, row, kp) -> tirx.PrimExpr:
        """int32 holding the codes of features 2kp (low half) and 2kp + 1 (high half)."""
        if self.fmt.bits == 8:
            low = T.Cast("int32", view[row, kp * 2]) & tirx.const(0xFFFF, "int32")
            return low | (T.Cast("int32", view[row, kp * 2 + 1]) << 16)
        byte = T.bind(T.Cast("int32", view[row, kp]))
        return (byte & tirx.const(15, "int32")) | ((byte >> 4) << 16)

    def pair_chunk(self, view: tirx.Buffer, row, chunk) -> tirx.PrimExpr:
        """int32 x 16: `pair(view, row, kp)` for the 16 pairs kp of chunk `chunk`."""
        if self.fmt.bits == 8:
            # Little-endian: int16 lanes 2kp, 2kp + 1 are the low and high halves of int32 kp.
            return T.reinterpret("int32x16", self.codes(view, row, chunk))
        raw = T.bind(T.Cast("int32x16", view[row, vec.ramp(chunk * (CHUNK // 2), CHUNK // 2)]))
        low = raw & vec.splat(tirx.const(15, "int32"), 16)
        return low | (
            (raw >> vec.splat(tirx.const(4, "int32"), 16)) << vec.splat(tirx.const(16, "int32"), 16)
        )

    def group(self, chunk):
        return chunk if self.fmt.group_size == CHUNK else chunk * CHUNK // self.fmt.group_size

    def scale(self, planes: dict[str, tirx.Buffer], row, chunk) -> tirx.PrimExpr:
        return vec.to_f32(planes["scales"][row, self.group(chunk)])

    def offset(self, planes: dict[str, tirx.Buffer], row, chunk) -> tirx.PrimExpr:
        """Added once per feature: the group minimum, or -zero_point * scale."""
        if self.fmt.affine:
            return vec.to_f32(planes["mins"][row, self.group(chunk)])
        return vec.f32(-self.fmt.zero_point) * self.scale(planes, row, chunk)


def supports(fmt) -> bool:
    """Whether the quantized CPU kernels read this format (8-bit affine is not stored signed)."""
    return (
        isinstance(fmt, GroupIntFormat)
        and not fmt.tiled
        and fmt.group_size % CHUNK == 0
        and (fmt.bits == 4 or not fmt.affine)
    )
