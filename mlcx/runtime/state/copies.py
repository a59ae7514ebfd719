"""State copies (src slot, dst slot) cut into waves that a runner may do in any order."""

from __future__ import annotations

from collections.abc import Sequence

Copy = tuple[int, int]


def copy_waves(pairs: Sequence[Copy]) -> list[list[Copy]]:
    """`pairs`, meant in order, as consecutive waves: one `copy_states` call each, in order.
    Within a wave no slot is written twice or both read and written, so a GPU may run its
    pairs in parallel (a save from a slot that a later restore overwrites lands in an earlier
    wave than the restore)."""
    waves: list[list[Copy]] = []
    read: set[int] = set()
    written: set[int] = set()
    for src, dst in pairs:
        if src == dst:
            continue
        if not waves or dst in written or dst in read or src in written:
            waves.append([])
            read, written = set(), set()
        waves[-1].append((src, dst))
        read.add(src)
        written.add(dst)
    return waves
