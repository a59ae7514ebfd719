"""How the GPU linear kernels read a weight format, eight input features (a step) at a time.

Every format is read in place, as the artifact stores it (mlcx.quantization.formats):
- 4-bit groups: one uint32 word holds the eight codes of a step (feature k in bits 4 * (k % 8));
- 8-bit groups: the int8 plane is read as uint32 words, four codes each (two words a step);
- dense f32/f16: eight element reads a step;
- 5-bit, K-quant and IQ4 blocks (BlockFormat): the word holding the step's low bits (four: as
  for 4-bit groups; Q2_K / Q3_K: two, half a word), plus the word of `qhigh` holding its high
  bits; IQ4 codes index ggml's value table, copied once into each thread's local array
  (`local_table`: one indexed read a code, where a select tree doubled the shaders); a
  group's scale is d * sc (K-quants; Q2_K: the low nibble of its scale byte) or the f16
  scale, its offset -dmin * mn (Q2_K: the high nibble), the f16 minimum, or -zero_point * scale;
- MXFP4: the code word as for 4-bit groups, each code its E2M1 value doubled (a table held in
  one constant word, mlcx.quantization.mxfp4.e2m1_twice), the scale 2 ** (e - 128), no offset.
A quantized row of a group is `scale * (codes . x) + offset * sum(x)` (offset = min for affine
formats, -zero_point * scale for symmetric 4-bit; 8-bit codes are stored centred), so the
inner loop multiplies raw codes and the scale is applied once per group.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx
from tvm.script.ir_builder import tirx as T

from mlcx.quantization.block_formats import SUPER, BlockFormat
from mlcx.quantization.block_planes import table_value
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
        if self.blocks:
            return [
                _bits(bufs[plane], row, step, width)
                for plane, width in (("qweight", self.fmt.low), ("qhigh", self.fmt.high))
                if width
            ]
        if self.fmt.bits == 4:
            return [bufs["qweight"][row, step]]
        return [bufs["qweight"][row, step * 2], bufs["qweight"][row, step * 2 + 1]]

    def local_table(self) -> tirx.Buffer | None:
        """A table kind's values as a thread-local float32 [16] array (None: no table)."""
        if not (self.blocks and self.fmt.table):
            return None
        table = T.alloc_buffer((len(self.fmt.table),), "float32", scope="local")
        for i, value in enumerate(self.fmt.table):
            T.buffer_store(table, tirx.const(float(value), "float32"), [i])
        return table

    def codes(self, loaded: list, table: tirx.Buffer | None = None) -> list[tirx.PrimExpr]:
        """The eight float32 codes (or dense values) of a step, from what load_step loaded
        (table kinds: their values, from `local_table`'s array where given)."""
        if not self.quantized:
            return loaded
        if self.blocks:
            return self._block_codes(loaded, table)
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

    def _block_codes(self, loaded: list, table) -> list[tirx.PrimExpr]:
        word, high = loaded[0], loaded[1] if len(loaded) > 1 else None
        low, width = self.fmt.low, self.fmt.high
        codes = []
        for i in range(STEP):
            code = (word >> _u32(low * i)) & _u32((1 << low) - 1)
            if high is not None:
                code = code | (((high >> _u32(width * i)) & _u32((1 << width) - 1)) << _u32(low))
            if table is not None:
                codes.append(table[code.astype("int32")])
            elif self.fmt.table:
                codes.append(table_value(code, self.fmt.table).astype("float32"))
            elif self.fmt.affine:
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
            sup = group * fmt.group_size // SUPER
            sc, mn = _sub_scales(fmt, bufs, row, group)
            scale = _f32(bufs["d"], row, sup) * sc
            offset = -(_f32(bufs["dmin"], row, sup) * mn) if fmt.affine else None
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


def _bits(plane: tirx.Buffer, row, step, width: int) -> tirx.PrimExpr:
    """The word of a `width`-bit code plane holding a step's values, shifted to bit 0."""
    bit = step * (STEP * width)
    if width == 4:
        return plane[row, step]
    return plane[row, bit // 32] >> (bit % 32).astype("uint32")


def _sub_scales(fmt: BlockFormat, bufs, row, group):
    """(integer sub-block scale, minimum or None) of a super-block kind, as float32."""
    if fmt.spec.packed:  # widened first: WGSL reads sub-word storage only into a cast
        byte = bufs["scm"][row, group].astype("int32")
        low, high = byte & tirx.const(15, "int32"), byte >> tirx.const(4, "int32")
        return low.astype("float32"), high.astype("float32")
    mn = _f32(bufs["mn"], row, group) if fmt.affine else None
    return _f32(bufs["sc"], row, group), mn


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
