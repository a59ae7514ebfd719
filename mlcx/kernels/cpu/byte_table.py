"""A 16-entry byte table indexed by a vector of 4-bit codes: one byte shuffle per register.

Formats whose codes are not their values (MXFP4's E2M1 codes, IQ4_NL's non-linear levels)
turn each code into an integer through a table of 16 bytes. Every vector ISA mlcx targets has
a byte shuffle that is exactly that lookup: `pshufb` (SSSE3, AVX2, AVX-512BW: the 16 bytes
repeated in every 128-bit lane) and NEON's `tbl`. LLVM has no portable form of it, so the
target's instruction is named (KernelConfig.byte_table, from the target's features) and wide
logical vectors are cut into its width; a target with none gets a select tree over the index
bits (four levels of blends).
"""

from __future__ import annotations

from collections.abc import Sequence

from tvm import tirx
from tvm.script.ir_builder import tirx as T

# (CPU feature, bytes a shuffle takes, LLVM intrinsic), the widest first
SHUFFLES: tuple[tuple[str, int, str], ...] = (
    ("avx512bw", 64, "llvm.x86.avx512.pshuf.b.512"),
    ("avx2", 32, "llvm.x86.avx2.pshuf.b"),
    ("ssse3", 16, "llvm.x86.ssse3.pshuf.b.128"),
    ("neon", 16, "llvm.aarch64.neon.tbl1"),
)
ENTRIES = 16


def shuffle_for(features: set[str]) -> str:
    """The feature naming the target's byte shuffle ("" where it has none)."""
    return next((name for name, _, _ in SHUFFLES if name in features), "")


def _constant(values: Sequence[int]) -> tirx.PrimExpr:
    return tirx.Shuffle([tirx.const(v, "int8") for v in values], list(range(len(values))))


def _part(values: Sequence[int], index, width: int, intrinsic: str) -> tirx.PrimExpr:
    table = _constant([values[j % ENTRIES] for j in range(width)])
    return T.call_llvm_pure_intrin(f"int8x{width}", intrinsic, table, index)


def _select_tree(values: Sequence[int], index, lanes: int) -> tirx.PrimExpr:
    """table[index] by the index's bits, lowest bit innermost."""

    def splat(v):
        return T.Broadcast(tirx.const(v, "int8"), lanes)

    level = [splat(v) for v in values]
    for bit in range(4):
        bits = T.bind(index & splat(1 << bit))  # (a vector of bools cannot be bound)
        level = [
            T.Select(bits != splat(0), level[i + 1], level[i]) for i in range(0, len(level), 2)
        ]
    return level[0]


def lookup16(values: Sequence[int], index, lanes: int, shuffle: str) -> tirx.PrimExpr:
    """int8 x lanes: values[index[i]] in lane i, for int8 x lanes indices below 16 (a
    statement context: the select tree binds). `shuffle`: shuffle_for's answer."""
    if len(values) != ENTRIES or not all(-128 <= v < 128 for v in values):
        raise ValueError(f"a byte table holds {ENTRIES} int8 values, not {list(values)}")
    fits = [
        (width, name)
        for feature, width, name in SHUFFLES[_start(shuffle) :]
        if width <= lanes and lanes % width == 0 and (feature == "neon") == (shuffle == "neon")
    ]
    if not fits:
        return _select_tree(values, index, lanes)
    width, intrinsic = fits[0]
    parts = [
        _part(values, T.Shuffle([index], list(range(p * width, (p + 1) * width))), width, intrinsic)
        for p in range(lanes // width)
    ]
    return parts[0] if len(parts) == 1 else T.Shuffle(parts, list(range(lanes)))


def _start(shuffle: str) -> int:
    """Where `shuffle` and the narrower shuffles of its ISA start in SHUFFLES (none: the end)."""
    names = [feature for feature, _, _ in SHUFFLES]
    return names.index(shuffle) if shuffle in names else len(names)
