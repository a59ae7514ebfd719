"""Weight formats for llama.cpp's 5-bit, K-quant and IQ4 blocks (Q5_0, Q5_1, Q2_K .. Q6_K,
IQ4_NL, IQ4_XS).

Each keeps exactly what the GGUF blocks hold, unpacked into planes the kernels read:
- `qweight` uint32 [N, K * low / 32]: the low bits of every code (four; Q2_K / Q3_K: two),
  row-major as GroupIntFormat's 4-bit layout generalized (feature k at bit k * low);
- `qhigh` uint32 [N, K * high / 32] (Q3_K, 5- and 6-bit codes): the bits above them
  (mlcx.quantization.block_planes);
- per-group values. Q5_0 / Q5_1 / IQ4_NL: f16 `scales` (and `mins`) per 32 weights, as in the
  file. K-quants (256-weight super-blocks): the sub-block integer scales `sc` (uint8 per 32;
  Q6_K / Q3_K: int8 per 16; IQ4_XS: int8 per 32) and minimums `mn` (uint8 per 32; Q2_K keeps
  scale | minimum << 4 as the file's byte per 16, `scm`), and the super-block f16 `d` / `dmin`.

A weight is computed as ggml computes it, so the float result is the same bit for bit:
    Q4_K, Q5_K, Q2_K: (d * sc) * q - (dmin * mn)    Q6_K, Q3_K: (d * sc) * (q - 2**(bits-1))
    Q5_0:   scale * (q - 16)     Q5_1: scale * q + min
    IQ4_NL: scale * kvalues[q]   IQ4_XS: (d * sc) * kvalues[q]
`tiled` keeps the same planes in mlcx.quantization.tiling's row-tiled byte order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from tvm import te, tirx

from mlcx.quantization import block_planes, tiling
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
    def low(self) -> int:
        """Bits of a code in the `qweight` plane."""
        return self.spec.low

    @property
    def high(self) -> int:
        """Bits of a code above its low bits (the `qhigh` plane)."""
        return self.spec.high

    @property
    def table(self) -> tuple[int, ...] | None:
        return self.spec.table

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
        if self.spec.packed:
            return ("scm", "d", "dmin")
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
        if plane in ("sc", "scm"):
            return (n, k // self.group_size), "uint8" if self.affine else "int8"
        return (n, k // 32), "uint8"  # mn

    def param_specs(self, out_features: int, in_features: int) -> ParamSpecs:
        n, k = out_features, in_features
        self.check_shape(n, k)
        specs: ParamSpecs = dict(block_planes.plane_specs(self.spec, n, k))
        for plane in self.group_planes:
            specs[plane] = self._plane_shape(plane, n, k)
        return specs

    # ---- numpy: integer parts <-> stored planes <-> float weights ----

    def from_parts(self, codes: np.ndarray, groups: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Store unsigned codes [N, K] (below 2**bits) and the per-group planes (row-major,
        dtypes as param_specs says)."""
        n, k = codes.shape
        specs = self.param_specs(n, k)
        params = block_planes.pack_planes(codes, self.spec, self.tiled)
        for plane in self.group_planes:
            shape, dtype = specs[plane]
            value = np.ascontiguousarray(groups[plane], dtype=dtype)
            if value.shape != shape:
                raise ValueError(f"{self.kind} plane {plane} must be {shape}, not {value.shape}")
            params[plane] = tiling.tile_groups(value) if self.tiled else value
        return params

    def parts(self, params: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Inverse of from_parts: (codes [N, K] uint8, row-major per-group planes)."""
        codes = block_planes.unpack_planes(params, self.spec, self.tiled)
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
        sc, mn = groups.get("sc"), groups.get("mn")
        if self.spec.packed:
            sc, mn = groups["scm"] & 15, groups["scm"] >> 4
        scale = np.repeat(groups["d"].astype(np.float32), per, axis=1) * sc.astype(np.float32)
        if not self.affine:
            return scale, None
        dmin = np.repeat(groups["dmin"].astype(np.float32), per, axis=1)
        return scale, -(dmin * mn.astype(np.float32))

    def unpack(self, params: dict[str, np.ndarray]) -> np.ndarray:
        codes, groups = self.parts(params)
        n, k = codes.shape
        scale, minimum = self.group_values(groups)
        if self.table:
            q = np.array(self.table, np.float32)[codes].reshape(n, -1, self.group_size)
        else:
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
        code = block_planes.code_expr(params, self.spec, self.tiled, n, k)
        scale = self.scale_expr(params, n, k // self.group_size, dtype)
        if self.table:
            return block_planes.table_value(code, self.table).astype(dtype) * scale
        code = code.astype(dtype)
        if not self.affine:
            return (code - tirx.const(self.zero_point, dtype)) * scale
        return code * scale + self.min_expr(params, n, k // self.group_size, dtype)

    def _raw(self, values: te.Tensor, n, group) -> tirx.PrimExpr:
        if self.tiled:
            return values[tiling.group_index(n, group, int(values.shape[1]))]
        return values[n, group]

    def _group(self, values: te.Tensor, n, group, dtype: str) -> tirx.PrimExpr:
        return self._raw(values, n, group).astype(dtype)

    def _sub_scale(self, params, n, group, dtype: str, minimum: bool = False) -> tirx.PrimExpr:
        """The integer sub-block scale (or minimum) of a super-block kind."""
        if not self.spec.packed:
            return self._group(params["mn" if minimum else "sc"], n, group, dtype)
        byte = self._raw(params["scm"], n, group).astype("int32")  # WGSL: widened first
        nibble = byte >> tirx.const(4, "int32") if minimum else byte & tirx.const(15, "int32")
        return nibble.astype(dtype)

    def scale_expr(self, params, n, group, dtype: str) -> tirx.PrimExpr:
        if not self.spec.super_block:
            return self._group(params["scales"], n, group, dtype)
        sup = group // (SUPER // self.group_size)
        return self._group(params["d"], n, sup, dtype) * self._sub_scale(params, n, group, dtype)

    def min_expr(self, params, n, group, dtype: str) -> tirx.PrimExpr:
        """The minimum added to a group's weights (affine kinds)."""
        if not self.spec.super_block:
            return self._group(params["mins"], n, group, dtype)
        dmin = self._group(params["dmin"], n, group // (SUPER // self.group_size), dtype)
        mn_group = group if self.spec.packed else group // (32 // self.group_size)
        return -(dmin * self._sub_scale(params, n, mn_group, dtype, minimum=True))
