"""Weight storage formats.

A `WeightFormat` says how one 2-D weight `[out_features, in_features]` is stored (which arrays,
shapes and dtypes), how to pack a float matrix into it, how to unpack it again (numpy, for
checks and for lossy conversions), and how to read one element inside a TE compute, so that
dequantization happens inside the kernel that consumes the weight.

Quantized formats group `group_size` consecutive input features under one scale (and, for
affine formats, one minimum). 4-bit values are packed eight to a uint32, element `k` of a row
in word `k // 8`, bits `4 * (k % 8)`; a `tiled` format keeps the same arrays with their bytes
in the row-tiled order of mlcx.quantization.tiling (the CPU kernels' layout).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from tvm import te, tirx

from mlcx.quantization import tiling
from mlcx.quantization.bit_packing import pack_bits, unpack_bits
from mlcx.quantization.block_formats import KINDS, BlockFormat, ParamSpecs
from mlcx.quantization.mxfp4 import Mxfp4Format
from mlcx.quantization.stacked import StackedFormat


@dataclass(frozen=True)
class DenseFormat:
    """A plain float matrix stored in `dtype`."""

    dtype: str

    @property
    def name(self) -> str:
        return self.dtype

    @property
    def suffixes(self) -> tuple[str, ...]:
        return ("weight",)

    def param_specs(self, out_features: int, in_features: int) -> ParamSpecs:
        return {"weight": ((out_features, in_features), self.dtype)}

    def pack(self, weight: np.ndarray) -> dict[str, np.ndarray]:
        return {"weight": np.ascontiguousarray(weight, dtype=self.dtype)}

    def unpack(self, params: dict[str, np.ndarray]) -> np.ndarray:
        return params["weight"].astype(np.float32)

    def element(self, params: dict[str, te.Tensor], n, k, dtype: str) -> tirx.PrimExpr:
        value = params["weight"][n, k]
        return value if self.dtype == dtype else value.astype(dtype)


@dataclass(frozen=True)
class GroupIntFormat:
    """Integer weights with one float scale (and optionally one minimum) per group.

    symmetric: value = (q - zero_point) * scale, zero_point = 2 ** (bits - 1)
    affine:    value = q * scale + min
    """

    bits: int
    group_size: int
    scale_dtype: str
    affine: bool = False
    tiled: bool = False  # bytes in mlcx.quantization.tiling's order

    def __post_init__(self) -> None:
        if self.bits not in (4, 8):
            raise ValueError(f"group quantization supports 4 or 8 bits, not {self.bits}")
        if self.group_size % 8:
            raise ValueError(f"group size must be a multiple of 8, not {self.group_size}")

    @property
    def name(self) -> str:
        kind = "affine" if self.affine else "sym"
        layout = f"-t{tiling.TILE_ROWS}" if self.tiled else ""
        return f"int{self.bits}-{kind}-g{self.group_size}-{self.scale_dtype}{layout}"

    @property
    def row_major(self) -> GroupIntFormat:
        """The same format with its bytes in plain row order."""
        return replace(self, tiled=False)

    @property
    def zero_point(self) -> int:
        return 0 if self.affine else 1 << (self.bits - 1)

    @property
    def suffixes(self) -> tuple[str, ...]:
        return ("scales", "qweight", "mins") if self.affine else ("scales", "qweight")

    def check_shape(self, out_features: int, in_features: int) -> None:
        if in_features % self.group_size:
            raise ValueError(
                f"in_features {in_features} is not a multiple of the group size "
                f"{self.group_size}; choose an unquantized format for this weight"
            )
        if self.tiled:
            tiling.check_tileable(out_features, in_features)

    def param_specs(self, out_features: int, in_features: int) -> ParamSpecs:
        self.check_shape(out_features, in_features)
        groups = in_features // self.group_size
        specs: ParamSpecs = {"scales": ((out_features, groups), self.scale_dtype)}
        if self.bits == 4:
            specs["qweight"] = ((out_features, in_features // 8), "uint32")
        else:
            specs["qweight"] = ((out_features, in_features), "int8")
        if self.affine:
            specs["mins"] = ((out_features, groups), self.scale_dtype)
        return specs

    def pack(self, weight: np.ndarray) -> dict[str, np.ndarray]:
        """Round-to-nearest quantization of a float matrix."""
        out_features, in_features = weight.shape
        self.check_shape(out_features, in_features)
        w = weight.astype(np.float32).reshape(out_features, -1, self.group_size)
        qmax = (1 << self.bits) - 1
        if self.affine:
            lo, hi = self._stored(w.min(axis=2)), w.max(axis=2)
            scale = self._stored((hi - lo) / qmax)
            safe = np.where(scale == 0, 1.0, scale)
            q = np.clip(np.rint((w - lo[..., None]) / safe[..., None]), 0, qmax)
            return self.from_ints(q.reshape(out_features, in_features), scale, lo)
        scale = self._stored(np.abs(w).max(axis=2) / (self.zero_point - 1))
        safe = np.where(scale == 0, 1.0, scale)
        q = np.rint(w / safe[..., None]) + self.zero_point
        return self.from_ints(np.clip(q, 0, qmax).reshape(out_features, in_features), scale)

    def _stored(self, scale: np.ndarray) -> np.ndarray:
        """The scales as stored, back in f32: codes are rounded against these, not the exact
        ones, so that a narrow scale dtype costs no more than its own rounding."""
        stored = scale.astype(self.scale_dtype)
        if not np.isfinite(stored).all():
            raise ValueError(
                f"weights up to {float(np.max(scale)):.3g} x the code range overflow "
                f"{self.scale_dtype} scales; use an unquantized format (q0f32) for this model"
            )
        return stored.astype(np.float32)

    def from_ints(
        self, q: np.ndarray, scale: np.ndarray, minimum: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """Store unsigned integer codes `q [N, K]` (0 .. 2**bits - 1) with their scales."""
        params = {"scales": np.ascontiguousarray(scale, dtype=self.scale_dtype)}
        if self.affine:
            if minimum is None:
                raise ValueError("affine formats need a minimum per group")
            params["mins"] = np.ascontiguousarray(minimum, dtype=self.scale_dtype)
        stored = q if self.bits == 4 else (q.astype(np.int16) - self.zero_point).astype(np.int8)
        if self.tiled:
            return self._tile(params, stored)
        params["qweight"] = pack_bits(q, 4) if self.bits == 4 else stored
        return params

    def _tile(self, params: dict[str, np.ndarray], stored: np.ndarray) -> dict[str, np.ndarray]:
        """`params` with the codes (`stored`: 4-bit codes or int8 values, [N, K]) and the group
        planes in the tiled order; 4-bit codes as uint32 words [N, K / 8]."""
        n, k = stored.shape
        self.check_shape(n, k)
        flat = tiling.tile_codes(stored, self.bits)
        qweight = flat.view(np.uint32).reshape(n, k // 8) if self.bits == 4 else flat.reshape(n, k)
        tiled = {name: tiling.tile_groups(values) for name, values in params.items()}
        return {**tiled, "qweight": qweight}

    def unpack(self, params: dict[str, np.ndarray]) -> np.ndarray:
        q = self.codes(params["qweight"]).astype(np.float32)
        out_features, in_features = q.shape
        q = q.reshape(out_features, -1, self.group_size)
        scale = self._groups(params["scales"])[..., None]
        if self.affine:
            w = q * scale + self._groups(params["mins"])[..., None]
        else:
            w = (q - self.zero_point) * scale
        return w.reshape(out_features, in_features)

    def _groups(self, values: np.ndarray) -> np.ndarray:
        values = tiling.untile_groups(values) if self.tiled else values
        return values.astype(np.float32)

    def codes(self, qweight: np.ndarray) -> np.ndarray:
        """Unsigned integer codes `[N, K]` of a stored `qweight`."""
        if self.tiled:
            n, k = qweight.shape[0], qweight.shape[1] * (8 if self.bits == 4 else 1)
            flat = np.ascontiguousarray(qweight).reshape(-1)
            if self.bits == 4:
                return tiling.untile_codes(flat.view(np.uint16), 4, n, k)
            return tiling.untile_codes(flat, 8, n, k).astype(np.int16) + self.zero_point
        if self.bits == 8:
            return qweight.astype(np.int16) + self.zero_point
        return unpack_bits(qweight, 4)

    def element(self, params: dict[str, te.Tensor], n, k, dtype: str) -> tirx.PrimExpr:
        scale = self._group_value(params["scales"], n, k).astype(dtype)
        if self.tiled:
            code = self._tiled_code(params["qweight"], n, k)
        elif self.bits == 4:
            word = params["qweight"][n, k // 8]
            code = (word >> (k % 8 * 4).astype("uint32")) & tirx.const(15, "uint32")
        else:
            code = params["qweight"][n, k].astype("int32") + tirx.const(self.zero_point, "int32")
        code = code.astype(dtype)
        if self.affine:
            return code * scale + self._group_value(params["mins"], n, k).astype(dtype)
        return (code - tirx.const(self.zero_point, dtype)) * scale

    def _group_value(self, values: te.Tensor, n, k) -> tirx.PrimExpr:
        if not self.tiled:
            return values[n, k // self.group_size]
        return values[tiling.group_index(n, k // self.group_size, int(values.shape[1]))]

    def _tiled_code(self, qweight: te.Tensor, n, k) -> tirx.PrimExpr:
        """The unsigned code of row n, feature k of a tiled qweight."""
        cols = int(qweight.shape[1])
        if self.bits == 8:
            offset, _ = tiling.code_offset(n, k, 8, cols)
            code = qweight[offset // cols, offset % cols].astype("int32")
            return code + tirx.const(self.zero_point, "int32")
        word, shift = tiling.code_offset(n, k, 4, cols * 8)
        stored = qweight[word // 2 // cols, word // 2 % cols]
        bits = (word % 2 * 16 + shift).astype("uint32")
        return (stored >> bits) & tirx.const(15, "uint32")


WeightFormat = DenseFormat | GroupIntFormat | BlockFormat | Mxfp4Format | StackedFormat


def format_from_name(name: str) -> WeightFormat:
    """The format whose `name` this is (inverse of each format's `name`)."""
    if name.startswith(StackedFormat.PREFIX):
        return StackedFormat.from_name(name, format_from_name)
    parts = name.split("-")
    if parts[0] in KINDS or parts[0] == Mxfp4Format.KIND:
        tiled = parts[1:] == [f"t{tiling.TILE_ROWS}"]
        if len(parts) > 1 and not tiled:
            raise ValueError(f"not a weight format name: {name!r}")
        return Mxfp4Format(tiled) if parts[0] == Mxfp4Format.KIND else BlockFormat(parts[0], tiled)
    if len(parts) == 1:
        return DenseFormat(name)
    tiled = parts[-1] == f"t{tiling.TILE_ROWS}"
    try:
        bits, kind, group, scale_dtype = parts[:-1] if tiled else parts
        return GroupIntFormat(
            int(bits.removeprefix("int")),
            int(group.removeprefix("g")),
            scale_dtype,
            kind == "affine",
            tiled,
        )
    except ValueError:
        raise ValueError(f"not a weight format name: {name!r}") from None
