"""MXFP4 (OCP microscaling FP4), the expert format of gpt-oss, kept bit for bit.

A block of 32 consecutive weights of a row shares one E8M0 exponent byte `e`; each weight is
a 4-bit E2M1 code (sign bit 3, then 2 exponent bits and 1 mantissa bit). As ggml computes it,

    w = E2M1_TWICE[code] * 2 ** (e - 128)

where E2M1_TWICE are the E2M1 values doubled, all small integers (0, 1, 2, 3, 4, 6, 8, 12 and
their negatives), so the kernels multiply integer codes and apply the block's power of two to
the block's partial sum. Planes (per row of a weight [N, K]):
- `qweight` uint32 [N, K/8]: the codes, eight to a word, feature k at bits 4 * (k % 8) of word
  k // 8 (GroupIntFormat's 4-bit layout; byte for byte the `*_blocks` of a Hugging Face
  checkpoint, see mlcx.quantization.mxfp4_blocks);
- `exponents` uint8 [N, K/32]: the E8M0 bytes as stored.
17 bytes per 32 weights, as in the file. `tiled` keeps both planes in
mlcx.quantization.tiling's row-tiled order (the CPU kernels' layout).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from tvm import te, tirx

from mlcx.quantization import tiling
from mlcx.quantization.bit_packing import pack_bits, unpack_bits

GROUP = 32
E2M1_TWICE = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)
# the eight doubled magnitudes as the nibbles of one word: magnitude m at bits 4 * m
MAGNITUDES = sum(v << (4 * m) for m, v in enumerate(E2M1_TWICE[:8]))


def e8m0_half(e: np.ndarray) -> np.ndarray:
    """2 ** (e - 128) as float32, built from its bits (e = 0, 1 are subnormal)."""
    e = np.asarray(e, dtype=np.uint32)
    small = np.uint32(0x00200000) << (e & np.uint32(1))
    bits = np.where(e < 2, small, (e - np.uint32(1)) << np.uint32(23))
    return bits.astype(np.uint32).view(np.float32)


@dataclass(frozen=True)
class Mxfp4Format:
    tiled: bool = False

    KIND = "mxfp4"
    bits = 4
    group_size = GROUP
    suffixes = ("qweight", "exponents")

    @property
    def name(self) -> str:
        return self.KIND + (f"-t{tiling.TILE_ROWS}" if self.tiled else "")

    @property
    def row_major(self) -> Mxfp4Format:
        return replace(self, tiled=False)

    def check_shape(self, out_features: int, in_features: int) -> None:
        if in_features % GROUP:
            raise ValueError(f"mxfp4 needs in_features divisible by {GROUP}, not {in_features}")
        if self.tiled:
            tiling.check_tileable(out_features, in_features)

    def param_specs(self, out_features: int, in_features: int):
        n, k = out_features, in_features
        self.check_shape(n, k)
        return {"qweight": ((n, k // 8), "uint32"), "exponents": ((n, k // GROUP), "uint8")}

    # ---- numpy: codes and exponents <-> stored planes <-> float weights ----

    def from_parts(self, codes: np.ndarray, exponents: np.ndarray) -> dict[str, np.ndarray]:
        """Store E2M1 codes [N, K] (below 16) and E8M0 exponents [N, K/32] (uint8)."""
        n, k = codes.shape
        specs = self.param_specs(n, k)
        want = specs["exponents"][0]
        if exponents.shape != want:
            raise ValueError(f"mxfp4 exponents must be {want}, not {exponents.shape}")
        if self.tiled:
            qweight = tiling.tile_codes(codes, 4).view(np.uint32).reshape(n, k // 8)
            exponents = tiling.tile_groups(exponents.astype(np.uint8))
            return {"qweight": qweight, "exponents": exponents}
        return {"qweight": pack_bits(codes, 4), "exponents": exponents.astype(np.uint8)}

    def parts(self, params: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of from_parts: (codes [N, K] uint8, exponents [N, K/32] uint8)."""
        qweight, exponents = params["qweight"], params["exponents"]
        if not self.tiled:
            return unpack_bits(qweight, 4), np.asarray(exponents, np.uint8)
        n, k = qweight.shape[0], qweight.shape[1] * 8
        flat = np.ascontiguousarray(qweight).reshape(-1).view(np.uint16)
        codes = tiling.untile_codes(flat, 4, n, k).astype(np.uint8)
        return codes, tiling.untile_groups(np.asarray(exponents, np.uint8))

    def unpack(self, params: dict[str, np.ndarray]) -> np.ndarray:
        codes, exponents = self.parts(params)
        n, k = codes.shape
        values = np.asarray(E2M1_TWICE, np.int8)[codes].astype(np.float32)
        scale = e8m0_half(exponents)[..., None]
        with np.errstate(over="ignore"):  # e >= 254 times 12 is Inf, as in ggml
            return (scale * values.reshape(n, -1, GROUP)).reshape(n, k)

    def pack(self, weight: np.ndarray) -> dict[str, np.ndarray]:
        """Round to nearest with the reference exponent rule (ggml's and the OCP spec's):
        e = floor(log2(amax)) - 2 + 127, so the largest weight lands near code 6 (12 / 2)."""
        n, k = weight.shape
        self.check_shape(n, k)
        w = weight.astype(np.float32).reshape(n, -1, GROUP)
        if not np.isfinite(w).all():
            raise ValueError("cannot quantize a weight holding Inf or NaN")
        amax = np.abs(w).max(axis=2)
        with np.errstate(divide="ignore"):
            e = np.where(amax > 0, np.floor(np.log2(amax)) - 2 + 127, 0)
        e = np.clip(e, 0, 254).astype(np.uint8)
        grid = e8m0_half(e)[..., None, None] * np.asarray(E2M1_TWICE, np.float32)
        codes = np.abs(grid - w[..., None]).argmin(axis=-1).astype(np.uint8)
        return self.from_parts(codes.reshape(n, k), e)

    # ---- TE: one element, dequantized inside the consuming compute ----

    def element(self, params: dict[str, te.Tensor], n, k, dtype: str) -> tirx.PrimExpr:
        value = e2m1_twice(self._code(params["qweight"], n, k)).astype("float32")
        exponents = params["exponents"]
        if self.tiled:
            e = exponents[tiling.group_index(n, k // GROUP, int(exponents.shape[1]))]
        else:
            e = exponents[n, k // GROUP]
        weight = value * e8m0_half_expr(e)
        return weight if dtype == "float32" else weight.astype(dtype)

    def _code(self, qweight: te.Tensor, n, k) -> tirx.PrimExpr:
        cols = int(qweight.shape[1])
        if not self.tiled:
            return (qweight[n, k // 8] >> (k % 8 * 4).astype("uint32")) & tirx.const(15, "uint32")
        word, shift = tiling.code_offset(n, k, 4, cols * 8)
        stored = qweight[word // 2 // cols, word // 2 % cols]
        return (stored >> (word % 2 * 16 + shift).astype("uint32")) & tirx.const(15, "uint32")


MXFP4 = Mxfp4Format()


def e2m1_twice(code: tirx.PrimExpr) -> tirx.PrimExpr:
    """int32 E2M1_TWICE[code] of a uint32 code below 16: the magnitude from MAGNITUDES' nibbles,
    negated where the sign bit is set (a table in a register; no memory lookups on GPUs)."""
    u32 = lambda v: tirx.const(v, "uint32")  # noqa: E731
    magnitude = ((u32(MAGNITUDES) >> ((code & u32(7)) * u32(4))) & u32(15)).astype("int32")
    return tirx.Select(code >= u32(8), -magnitude, magnitude)


def e8m0_half_expr(e: tirx.PrimExpr) -> tirx.PrimExpr:
    """float32 2 ** (e - 128) of an E8M0 byte, from its bits (as e8m0_half)."""
    e = e.astype("uint32")
    u32 = lambda v: tirx.const(v, "uint32")  # noqa: E731
    small = u32(0x00200000) << (e & u32(1))
    bits = tirx.Select(e < u32(2), small, (e - u32(1)) << u32(23))
    return tirx.reinterpret("float32", bits)
