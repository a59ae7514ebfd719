"""How much of a speculative draft the scheduler lets a step verify."""

from __future__ import annotations

from collections.abc import Sequence as Seq

from mlcx.runtime.core.sequence import Sequence
from mlcx.runtime.kv import KVCacheManager


def fitting_draft(
    kv: KVCacheManager, seq: Sequence, draft: Seq[int], budget: int, num_running: int
) -> tuple[int, ...]:
    """The part of `draft` this step can verify: within the token budget, and only with
    blocks to spare for every running sequence's next token (a new page and a copy-on-write
    at most), so that no draft ever causes a preemption."""
    draft = tuple(draft[: max(budget - 1, 0)]) if seq.num_pending == 1 else ()
    if not draft:
        return ()
    needed = kv.blocks_needed(seq.seq_id, 1 + len(draft))
    if needed + 2 * num_running > kv.pool.num_free:
        return ()
    return draft
