"""llama.cpp's 5-bit and K-quant block types as numbers: code width, weights per scale,
super-blocks, offsets. Read by the formats (block_formats.py) and the quantizer
(block_quantize.py), which know nothing of each other."""

from __future__ import annotations

from dataclasses import dataclass

SUPER = 256  # weights of a K-quant super-block


@dataclass(frozen=True)
class BlockKind:
    """What distinguishes one ggml block type: code width, scale groups, offset."""

    bits: int
    group_size: int  # weights sharing one scale
    super_block: bool  # integer sub-block scales under f16 super-block d (/ dmin)
    affine: bool  # a minimum per group, else a zero point of 2 ** (bits - 1)

    @property
    def zero_point(self) -> int:
        return 0 if self.affine else 1 << (self.bits - 1)


KINDS: dict[str, BlockKind] = {
    "q5_0": BlockKind(5, 32, False, False),
    "q5_1": BlockKind(5, 32, False, True),
    "q4_k": BlockKind(4, 32, True, True),
    "q5_k": BlockKind(5, 32, True, True),
    "q6_k": BlockKind(6, 16, True, False),
}
