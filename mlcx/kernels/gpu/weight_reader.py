"""How the GPU linear kernels read a weight format, eight input features (a step) at a time.

Every format is read in place, as the artifact stores it (mlcx.quantization.formats):
- 4-bit groups: one uint32 word holds the eight codes of a step (feature k in bits 4 * (k % 8));
- 8-bit groups: the int8 plane is read as uint32 words, four codes each (two words a step);
- dense f32/f16: eight element reads a step;
- 5-bit and K-quant blocks (BlockFormat): the low-nibble word as for 4-bit groups, plus the
  word of `qhigh` holding the step's high bits; a group's scale is d * sc (K-quants) or the
  f16 scale, its offset -dmin * mn, the f16 minimum, or -zero_point * scale;
- MXFP4: the code word as for 4-bit groups, each code its E2M1 value doubled (a table held in
  one constant word, mlcx.quantization.mxfp4.e2m1_twice), the scale 2 ** (e - 128), no offset.
A quantized row of a group is `scale * (codes . x) + offset * sum(x)` (offset = min for affine
formats, -zero_point * scale for symmetric 4-bit; 8-bit codes are stored centred), so the
inner loop multiplies raw codes and the scale is applied once per group.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx

from mlcx.quantization.block_formats import SUPER, BlockFormat
from mlcx.quantization.formats import DenseFormat, GroupIntFormat, WeightFormat
from mlcx.quantization.mxfp4 import Mxfp4Format, e2m1_twice, e8m0_half_expr

STEP = 8  # input features per inner step


def _u32(value: int) -> tirx.PrimExpr:
    return tirx.const(value, "uint32")


def _f32(buf: tirx.Buffer, *index) -> tirx.PrimExpr:
    value = buf[index]
    return value if buf.dtype == "float32" else value.astype("float32")


@dataclass(frozen=True)
class GpuWeightReader:
    fmt: WeightFormat
    in_features: int

    def __post_init__(self) -> None:
        if not supports(self.fmt, self.in_features):
            raise ValueError(f"the GPU linear kernels do not read {self.fmt.name}")

    @property
    def quantized(self) -> bool:
        return isinstance(self.fmt, GroupIntFormat | BlockFormat | Mxfp4Format)

    @property
    def mxfp4(self) -> bool:
        return isinstance(self.fmt, Mxfp4Format)

    @property
    def blocks(self) -> bool:
        return isinstance(self.fmt, BlockFormat)

    @property
    def group(self) -> int:
        """Input features sharing one scale (a multiple of STEP); dense: one step."""
        return self.fmt.group_size if self.quantized else STEP

    @property
    def has_offset(self) -> bool:
        if self.blocks:
            return self.fmt.affine
        return self.quantized and self.fmt.bits == 4 and not self.mxfp4

    def param_specs(self, n: int) -> dict[str, tuple[tuple[int, ...], str]]:
        """The planes as the kernel takes them: the format's, with 8-bit codes as uint32 words
        (the graph passes a view of the int8 plane: `word_view`)."""
        specs = self.fmt.param_specs(n, self.in_features)
        if self.quantized and self.fmt.bits == 8:
            specs["qweight"] = ((n, self.in_features // 4), "uint32")
        return specs

    def load_step(self, bufs, row, step) -> list[tirx.PrimExpr]:
        """What one step of a row loads: the words (quantized) or the eight elements (dense)."""
        if not self.quantized:
            return [_f32(bufs["weight"], row, step * STEP + i) for i in range(STEP)]
        if self.blocks and self.fmt.high:
            bit = step * (STEP * self.fmt.high)
            high = bufs["qhigh"][row, bit // 32] >> (bit % 32).astype("uint32")
            return [bufs["qweight"][row, step], high]
        if self.fmt.bits == 4:
            return [bufs["qweight"][row, step]]
        return [bufs["qweight"][row, step * 2], bufs["qweight"][row, step * 2 + 1]]

    def codes(self, loaded: list) -> list[tirx.PrimExpr]:
        """The eight float32 codes (or dense values) of a step, from what load_step loaded."""
        if not self.quantized:
            return loaded
        if self.blocks:
            return self._block_codes(loaded)
        if self.mxfp4:
            (word,) = loaded
            return [
                e2m1_twice((word >> _u32(4 * i)) & _u32(15)).astype("float32") for i in range(STEP)
            ]
        if self.fmt.bits == 4:
            (word,) = loaded
            return [((word >> _u32(4 * i)) & _u32(15)).astype("float32") for i in range(STEP)]
        out = []
        for word in loaded:
            for i in range(4):
                signed = (word << _u32(24 - 8 * i)).astype("int32") >> tirx.const(24, "int32")
                out.append(signed.astype("float32"))
        return out

    def _block_codes(self, loaded: list) -> list[tirx.PrimExpr]:
        word, high = loaded[0], loaded[1] if len(loaded) > 1 else None
        width = self.fmt.high
        codes = []
        for i in range(STEP):
            code = (word >> _u32(4 * i)) & _u32(15)
            if high is not None:
                code = code | (((high >> _u32(width * i)) & _u32((1 << width) - 1)) << _u32(4))
            if self.fmt.affine:
                codes.append(code.astype("float32"))
            else:  # centred before the multiply: no offset to cancel against the sum of x
                zero = tirx.const(self.fmt.zero_point, "int32")
                codes.append((code.astype("int32") - zero).astype("float32"))
        return codes

    def _block_scale_offset(self, bufs, row, group):
        fmt = self.fmt
        if not fmt.spec.super_block:
            scale = _f32(bufs["scales"], row, group)
            offset = _f32(bufs["mins"], row, group) if fmt.affine else None
        else:
            scale = _f32(bufs["d"], row, group * fmt.group_size // SUPER)
            scale = scale * _f32(bufs["sc"], row, group)
            offset = None
            if fmt.affine:
                dmin = _f32(bufs["dmin"], row, group * fmt.group_size // SUPER)
                offset = -(dmin * _f32(bufs["mn"], row, group))
        return scale, offset

    def scale_offset(self, bufs, row, group) -> tuple[tirx.PrimExpr, tirx.PrimExpr | None]:
        """(scale, offset) of a row's group; offset multiplies the group's sum of x."""
        if not self.quantized:
            return tirx.const(1.0, "float32"), None
        if self.blocks:
            return self._block_scale_offset(bufs, row, group)
        if self.mxfp4:
            return e8m0_half_expr(bufs["exponents"][row, group]), None
        scale = _f32(bufs["scales"], row, group)
        if self.fmt.affine:
            return scale, _f32(bufs["mins"], row, group)
        if self.fmt.bits == 4:
            return scale, scale * tirx.const(-float(self.fmt.zero_point), "float32")
        return scale, None


def supports(fmt: WeightFormat, in_features: int) -> bool:
    if isinstance(fmt, DenseFormat):
        return fmt.dtype in ("float32", "float16") and in_features % STEP == 0
    if isinstance(fmt, BlockFormat):
        return not fmt.tiled and in_features % (SUPER if fmt.spec.super_block else 32) == 0
    if isinstance(fmt, Mxfp4Format):
        return not fmt.tiled and in_features % fmt.group_size == 0
    if not isinstance(fmt, GroupIntFormat):
        return False
    return fmt.bits in (4, 8) and fmt.group_size % STEP == 0 and in_features % fmt.group_size == 0
