"""Weight formats for llama.cpp's 5-bit and K-quant blocks (Q5_0, Q5_1, Q4_K, Q5_K, Q6_K).

Each keeps exactly what the GGUF blocks hold, unpacked into planes the kernels read:
- `qweight` uint32 [N, K/8]: the low four bits of every code, eight to a word as in
  GroupIntFormat's 4-bit layout (feature k in word k // 8, bits 4 * (k % 8));
- `qhigh` uint32 [N, K * high / 32] (5- and 6-bit codes): the bits above the low nibble,
  feature k's at bit k * high of the row's bit string;
- per-group values. Q5_0 / Q5_1: f16 `scales` (and `mins`) per 32 weights, as in the file.
  K-quants (256-weight super-blocks): the sub-block integer scales `sc` (uint8 per 32;
  Q6_K: int8 per 16) and minimums `mn` (uint8 per 32), and the super-block f16 `d` / `dmin`.

A weight is computed as ggml computes it, so the float result is the same bit for bit:
    Q4_K, Q5_K: (d * sc) * q - (dmin * mn)      Q6_K: (d * sc) * (q - 32)
    Q5_0:       scale * (q - 16)                Q5_1: scale * q + min
`tiled` keeps the same planes in mlcx.quantization.tiling's row-tiled byte order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from tvm import te, tirx

from mlcx.quantization import tiling
from mlcx.quantization.block_kinds import KINDS, SUPER, BlockKind

ParamSpecs = dict[str, tuple[tuple[int, ...], str]]


@dataclass(frozen=True)
class BlockFormat:
    kind: str
    tiled: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown block format {self.kind!r}; one of {', '.join(KINDS)}")

    @property
    def spec(self) -> BlockKind:
        return KINDS[self.kind]

    @property
    def bits(self) -> int:
        return self.spec.bits

    @property
    def high(self) -> int:
        """Bits of a code above its low nibble."""
        return self.spec.bits - 4

    @property
    def group_size(self) -> int:
        return self.spec.group_size

    @property
    def affine(self) -> bool:
        return self.spec.affine

    @property
    def zero_point(self) -> int:
        return self.spec.zero_point

    @property
    def name(self) -> str:
        return self.kind + (f"-t{tiling.TILE_ROWS}" if self.tiled else "")

    @property
    def row_major(self) -> BlockFormat:
        return replace(self, tiled=False)

    @property
    def group_planes(self) -> tuple[str, ...]:
        """The per-group planes, in parameter order."""
        if not self.spec.super_block:
            return ("scales", "mins") if self.affine else ("scales",)
        return ("sc", "mn", "d", "dmin") if self.affine else ("sc", "d")

    @property
    def suffixes(self) -> tuple[str, ...]:
        return ("qweight", *(("qhigh",) if self.high else ()), *self.group_planes)

    def check_shape(self, out_features: int, in_features: int) -> None:
        block = SUPER if self.spec.super_block else self.group_size
        if in_features % block:
            raise ValueError(
                f"{self.kind} needs in_features divisible by {block}, not {in_features}"
            )
        if self.tiled:
            tiling.check_tileable(out_features, in_features)

    def _plane_shape(self, plane: str, n: int, k: int) -> tuple[tuple[int, int], str]:
        if plane in ("d", "dmin"):
            return (n, k // SUPER), "float16"
        if plane in ("scales", "mins"):
            return (n, k // self.group_size), "float16"
        if plane == "sc":
            return (n, k // self.group_size), "uint8" if self.affine else "int8"
        return (n, k // 32), "uint8"  # mn

    def param_specs(self, out_features: int, in_features: int) -> ParamSpecs:
        n, k = out_features, in_features
        self.check_shape(n, k)
        specs: ParamSpecs = {"qweight": ((n, k // 8), "uint32")}
        if self.high:
            specs["qhigh"] = ((n, k * self.high // 32), "uint32")
        for plane in self.group_planes:
            specs[plane] = self._plane_shape(plane, n, k)
        return specs

    # ---- numpy: integer parts <-> stored planes <-> float weights ----

    def from_parts(self, codes: np.ndarray, groups: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Store unsigned codes [N, K] (below 2**bits) and the per-group planes (row-major,
        dtypes as param_specs says)."""
        n, k = codes.shape
        specs = self.param_specs(n, k)
        codes = codes.astype(np.uint32)
        params: dict[str, np.ndarray] = {}
        low = codes & 0xF
        if self.tiled:
            params["qweight"] = tiling.tile_codes(low, 4).view(np.uint32).reshape(n, k // 8)
        else:
            params["qweight"] = _pack_bits(low, 4)
        if self.high:
            high = codes >> 4
            if self.tiled:
                flat = tiling.tile_high(high, self.high).view(np.uint32)
                params["qhigh"] = flat.reshape(specs["qhigh"][0])
            else:
                params["qhigh"] = _pack_bits(high, self.high)
        for plane in self.group_planes:
            shape, dtype = specs[plane]
            value = np.ascontiguousarray(groups[plane], dtype=dtype)
            if value.shape != shape:
                raise ValueError(f"{self.kind} plane {plane} must be {shape}, not {value.shape}")
            params[plane] = tiling.tile_groups(value) if self.tiled else value
        return params

    def parts(self, params: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Inverse of from_parts: (codes [N, K] uint8, row-major per-group planes)."""
        qweight = params["qweight"]
        n, k = qweight.shape[0], qweight.shape[1] * 8
        if self.tiled:
            flat = np.ascontiguousarray(qweight).reshape(-1).view(np.uint16)
            codes = tiling.untile_codes(flat, 4, n, k).astype(np.uint8)
        else:
            codes = _unpack_bits(qweight, 4, k)
        if self.high:
            qhigh = np.ascontiguousarray(params["qhigh"])
            if self.tiled:
                high = tiling.untile_high(qhigh.reshape(-1).view(np.uint16), self.high, n, k)
            else:
                high = _unpack_bits(qhigh, self.high, k)
            codes = codes | (high.astype(np.uint8) << 4)
        groups = {
            p: tiling.untile_groups(params[p]) if self.tiled else params[p]
            for p in self.group_planes
        }
        return codes, groups

    def group_values(self, groups: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
        """(scale, minimum or None) per group as float32, each [N, K / group_size]."""
        if not self.spec.super_block:
            mins = groups["mins"].astype(np.float32) if self.affine else None
            return groups["scales"].astype(np.float32), mins
        per = SUPER // self.group_size
        scale = np.repeat(groups["d"].astype(np.float32), per, axis=1) * groups["sc"]
        if not self.affine:
            return scale.astype(np.float32), None
        dmin = np.repeat(groups["dmin"].astype(np.float32), per, axis=1)
        return scale.astype(np.float32), -(dmin * groups["mn"].astype(np.float32))

    def unpack(self, params: dict[str, np.ndarray]) -> np.ndarray:
        codes, groups = self.parts(params)
        n, k = codes.shape
        scale, minimum = self.group_values(groups)
        q = codes.astype(np.float32).reshape(n, -1, self.group_size)
        if minimum is None:
            w = (q - np.float32(self.zero_point)) * scale[..., None]
        else:
            w = q * scale[..., None] + minimum[..., None]
        return w.reshape(n, k)

    def pack(self, weight: np.ndarray) -> dict[str, np.ndarray]:
        """Round-to-nearest quantization of a float matrix (for tests and lossy conversions;
        llama.cpp's own quantizers search scales more carefully)."""
        from mlcx.quantization.block_quantize import quantize_parts

        self.check_shape(*weight.shape)
        codes, groups = quantize_parts(self.kind, weight.astype(np.float32))
        return self.from_parts(codes, groups)

    # ---- TE: one element, dequantized inside the consuming compute ----

    def element(self, params: dict[str, te.Tensor], n, k, dtype: str) -> tirx.PrimExpr:
        code = self._code(params, n, k).astype(dtype)
        scale = self.scale_expr(params, n, k // self.group_size, dtype)
        if not self.affine:
            return (code - tirx.const(self.zero_point, dtype)) * scale
        return code * scale + self.min_expr(params, n, k // self.group_size, dtype)

    def _group(self, values: te.Tensor, n, group, dtype: str) -> tirx.PrimExpr:
        if self.tiled:
            value = values[tiling.group_index(n, group, int(values.shape[1]))]
        else:
            value = values[n, group]
        return value.astype(dtype)

    def scale_expr(self, params, n, group, dtype: str) -> tirx.PrimExpr:
        if not self.spec.super_block:
            return self._group(params["scales"], n, group, dtype)
        sup = group // (SUPER // self.group_size)
        return self._group(params["d"], n, sup, dtype) * self._group(params["sc"], n, group, dtype)

    def min_expr(self, params, n, group, dtype: str) -> tirx.PrimExpr:
        """The minimum added to a group's weights (affine kinds)."""
        if not self.spec.super_block:
            return self._group(params["mins"], n, group, dtype)
        dmin = self._group(params["dmin"], n, group // (SUPER // 32), dtype)
        return -(dmin * self._group(params["mn"], n, group, dtype))

    def _code(self, params, n, k) -> tirx.PrimExpr:
        """The unsigned code of row n, feature k (uint32)."""
        qweight = params["qweight"]
        cols = int(qweight.shape[1])
        if self.tiled:
            word, shift = tiling.code_offset(n, k, 4, cols * 8)
            low = _u16_bits(qweight, word, shift, 4)
        else:
            low = (qweight[n, k // 8] >> (k % 8 * 4).astype("uint32")) & tirx.const(15, "uint32")
        if not self.high:
            return low
        qhigh = params["qhigh"]
        if self.tiled:
            word, shift = tiling.high_offset(n, k, self.high, cols * 8)
            high = _u16_bits(qhigh, word, shift, self.high)
        else:
            bit = k * self.high
            mask = tirx.const((1 << self.high) - 1, "uint32")
            high = (qhigh[n, bit // 32] >> (bit % 32).astype("uint32")) & mask
        return low | (high << tirx.const(4, "uint32"))


def _u16_bits(words: te.Tensor, word, shift, width: int) -> tirx.PrimExpr:
    """`width` bits at `shift` of uint16 word `word` of a uint32 plane [rows, cols]."""
    cols = int(words.shape[1])
    stored = words[word // 2 // cols, word // 2 % cols]
    bits = (word % 2 * 16 + shift).astype("uint32")
    return (stored >> bits) & tirx.const((1 << width) - 1, "uint32")


def _pack_bits(values: np.ndarray, width: int) -> np.ndarray:
    """[N, K] values below 2**width -> uint32 [N, K * width / 32], value k at bit k * width."""
    n, k = values.shape
    per = 32 // width
    parts = values.astype(np.uint32).reshape(n, k // per, per)
    shifts = (np.arange(per, dtype=np.uint32) * width)[None, None, :]
    return np.bitwise_or.reduce(parts << shifts, axis=2)


def _unpack_bits(words: np.ndarray, width: int, k: int) -> np.ndarray:
    per = 32 // width
    shifts = (np.arange(per, dtype=np.uint32) * width)[None, None, :]
    values = (words[..., None] >> shifts) & ((1 << width) - 1)
    return values.reshape(words.shape[0], k).astype(np.uint8)
