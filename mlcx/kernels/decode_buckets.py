"""Batch buckets of the decode function where it runs as CUDA graphs, written once: the
compiler bounds decode's memory by the largest, the runner pads a batch up to the next one.

A batch of b sequences runs as the smallest bucket B >= b: rows b..B-1 are padding over a
scratch KV page, and page_values is padded to B pages per possible context, so that every
call in a bucket has the same shapes (one graph each). No TVM import: the runtime reads this.
"""

from __future__ import annotations

DECODE_BUCKETS = (1, 2, 4, 8, 16, 32)


def bucket_for(batch: int, max_batch: int) -> int | None:
    """The smallest bucket that holds `batch` rows, None past `max_batch`."""
    if batch < 1:
        raise ValueError(f"a decode batch has at least one row, not {batch}")
    return next((b for b in DECODE_BUCKETS if batch <= b <= max_batch), None)


def page_capacity(bucket: int, context_window: int, page_size: int) -> int:
    """The fixed length of page_values for a bucket: every row at the full context."""
    return bucket * -(-context_window // page_size)
