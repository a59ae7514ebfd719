"""The integer arrays the compiled paged-attention kernels read for one forward step."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SequenceStep:
    """One sequence's share of a forward step."""

    page_table: Sequence[int]
    num_tokens: int
    """Tokens in the cache after this step, the new ones included."""
    num_new: int
    """The last `num_new` of those tokens are computed (and their KV written) by this step."""
    first: int | None = None
    """Position of the first new token; None: num_tokens - num_new. An image token attends to
    its whole image: its row sees num_tokens keys (up to the image's end) from its own place."""


@dataclass(frozen=True, eq=False)
class PageTableArrays:
    """Per-step kernel inputs for a batch of `b` sequences with `t` new tokens in total.

    All arrays are int32. The new tokens of sequence `i` are `q_indptr[i]:q_indptr[i+1]`, and
    its pages are `page_values[page_indptr[i]:page_indptr[i+1]]`. Each array is named after the
    step parameter it feeds (mlcx.kernels.step_params.PAGE_TABLES).
    """

    q_indptr: np.ndarray
    """[b+1] cumulative new-token counts."""
    positions: np.ndarray
    """[t] absolute position of each new token in its sequence."""
    slots: np.ndarray
    """[t] `block_id * page_size + offset` where each new token's KV is written."""
    page_indptr: np.ndarray
    """[b+1] cumulative page-table lengths."""
    page_values: np.ndarray
    """[nnz] the concatenated page tables, covering cached and new tokens."""
    last_page_len: np.ndarray
    """[b] tokens in each sequence's last page after this step, 1..page_size."""
    page_size: int

    @property
    def batch_size(self) -> int:
        return len(self.last_page_len)

    @property
    def num_new_tokens(self) -> int:
        return len(self.positions)

    @property
    def logit_positions(self) -> np.ndarray:
        """[b] index, among the `t` new tokens, of each sequence's last token."""
        return (self.q_indptr[1:] - 1).astype(np.int32)

    @property
    def kv_lens(self) -> np.ndarray:
        """[b] tokens in each sequence's cache after this step."""
        full_pages = np.diff(self.page_indptr) - 1
        return (full_pages * self.page_size + self.last_page_len).astype(np.int32)


def build_page_table_arrays(steps: Sequence[SequenceStep], page_size: int) -> PageTableArrays:
    """Kernel inputs for a batch; each step's page table must cover exactly its tokens."""
    if not steps:
        raise ValueError("a forward step needs at least one sequence")
    for step in steps:
        _check_step(step, page_size)
    num_new = np.array([s.num_new for s in steps], dtype=np.int64)
    num_tokens = np.array([s.num_tokens for s in steps], dtype=np.int64)
    num_pages = np.array([len(s.page_table) for s in steps], dtype=np.int64)
    q_indptr = _indptr(num_new)
    page_indptr = _indptr(num_pages)
    page_values = np.fromiter(
        (b for s in steps for b in s.page_table), dtype=np.int64, count=int(page_indptr[-1])
    )
    seq_of_token = np.repeat(np.arange(len(steps)), num_new)
    firsts = [s.num_tokens - s.num_new if s.first is None else s.first for s in steps]
    first_new_position = np.array(firsts, dtype=np.int64)[seq_of_token]
    index_in_seq = np.arange(int(q_indptr[-1])) - q_indptr[:-1][seq_of_token]
    positions = first_new_position + index_in_seq
    blocks = page_values[page_indptr[seq_of_token] + positions // page_size]
    return PageTableArrays(
        q_indptr=q_indptr.astype(np.int32),
        positions=positions.astype(np.int32),
        slots=(blocks * page_size + positions % page_size).astype(np.int32),
        page_indptr=page_indptr.astype(np.int32),
        page_values=page_values.astype(np.int32),
        last_page_len=(num_tokens - (num_pages - 1) * page_size).astype(np.int32),
        page_size=page_size,
    )


def token_steps(step: SequenceStep, page_size: int) -> list[SequenceStep]:
    """`step` as one single-token step per new token, each over its own prefix of the pages
    (the same slots are written and the same keys attended to, causally)."""
    first = step.num_tokens - step.num_new
    return [
        SequenceStep(step.page_table[: -(-(first + i + 1) // page_size)], first + i + 1, 1)
        for i in range(step.num_new)
    ]


def span_steps(
    step: SequenceStep, spans: Sequence[tuple[int, int]], page_size: int
) -> list[SequenceStep]:
    """`step` with bidirectional spans: every new token of a span [start, end) becomes a row
    that sees the keys up to `end` (its whole image, Gemma 3's image-token mask); the tokens
    between spans stay causal runs. Each span's tokens past the cache must all be in `step`
    (the scheduler never cuts an image), and the rows keep the tokens' order."""
    first, end = step.num_tokens - step.num_new, step.num_tokens
    rows: list[SequenceStep] = []
    pos = first
    for start, stop in sorted(spans):
        if stop <= first or start >= end:
            continue
        if stop > end:
            raise ValueError(f"image tokens {start}..{stop} are cut by a step ending at {end}")
        if start > pos:
            rows.append(_prefix_step(step, start, start - pos, page_size))
        for p in range(max(start, pos), stop):
            rows.append(SequenceStep(_pages(step, stop, page_size), stop, 1, first=p))
        pos = stop
    if pos < end:
        rows.append(_prefix_step(step, end, end - pos, page_size))
    return rows


def _pages(step: SequenceStep, tokens: int, page_size: int) -> Sequence[int]:
    return step.page_table[: -(-tokens // page_size)]


def _prefix_step(step: SequenceStep, tokens: int, new: int, page_size: int) -> SequenceStep:
    return SequenceStep(_pages(step, tokens, page_size), tokens, new)


def _indptr(counts: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def _check_step(step: SequenceStep, page_size: int) -> None:
    if not 1 <= step.num_new <= step.num_tokens:
        raise ValueError(
            f"num_new must be in 1..num_tokens ({step.num_tokens}), got {step.num_new}"
        )
    expected_pages = -(-step.num_tokens // page_size)
    if len(step.page_table) != expected_pages:
        raise ValueError(
            f"{step.num_tokens} tokens need {expected_pages} page(s) of {page_size}, "
            f"the page table has {len(step.page_table)}"
        )
