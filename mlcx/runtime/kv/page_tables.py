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
    first_new_position = (num_tokens - num_new)[seq_of_token]
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
