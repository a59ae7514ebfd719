"""What KV cache manager tests inspect: per-block refcounts and a full state snapshot."""

from __future__ import annotations

from mlcx.runtime.kv import KVCacheManager


def refcounts(m: KVCacheManager) -> list[int]:
    return [m.pool.refcount(b) for b in range(m.pool.num_blocks)]


def snapshot(m: KVCacheManager, seq_ids) -> tuple:
    """Everything an operation may change: refcounts, free order, cache size, page tables."""
    seqs = {s: (m.page_table(s), m.num_tokens(s)) for s in seq_ids}
    return refcounts(m), m.pool.free_order(), m.pool.num_cached, seqs
