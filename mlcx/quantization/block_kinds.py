"""llama.cpp's block types as numbers: code width, weights per scale, super-blocks, offsets,
value tables. Read by the formats (block_formats.py) and the quantizer (block_quantize.py),
which know nothing of each other."""

from __future__ import annotations

from dataclasses import dataclass

SUPER = 256  # weights of a K-quant super-block

# ggml's kvalues_iq4nl: the 16 int8 weights an IQ4_NL / IQ4_XS code selects.
IQ4_VALUES = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


@dataclass(frozen=True)
class BlockKind:
    """What distinguishes one ggml block type: code width, scale groups, offset.

    low:      bits of a code in the first plane (`qweight`); the rest (`qhigh`) above them
    table:    the codes index these int8 values (IQ4) instead of standing for q - zero_point
    sc_max:   the largest sub-block scale (K-quants; signed kinds go down to -sc_max - 1)
    packed:   sub-block scale and minimum share a byte, sc | mn << 4 (Q2_K: plane `scm`)
    """

    bits: int
    group_size: int  # weights sharing one scale
    super_block: bool  # integer sub-block scales under f16 super-block d (/ dmin)
    affine: bool  # a minimum per group, else a zero point of 2 ** (bits - 1)
    low: int = 4
    table: tuple[int, ...] | None = None
    sc_max: int = 63
    packed: bool = False

    @property
    def high(self) -> int:
        return self.bits - self.low

    @property
    def zero_point(self) -> int:
        return 0 if self.affine or self.table else 1 << (self.bits - 1)


KINDS: dict[str, BlockKind] = {
    "q5_0": BlockKind(5, 32, False, False),
    "q5_1": BlockKind(5, 32, False, True),
    "q4_k": BlockKind(4, 32, True, True),
    "q5_k": BlockKind(5, 32, True, True),
    "q6_k": BlockKind(6, 16, True, False, sc_max=127),
    "q2_k": BlockKind(2, 16, True, True, low=2, sc_max=15, packed=True),
    "q3_k": BlockKind(3, 16, True, False, low=2, sc_max=31),
    "iq4_nl": BlockKind(4, 32, False, False, table=IQ4_VALUES),
    "iq4_xs": BlockKind(4, 32, True, False, table=IQ4_VALUES, sc_max=31),
}
