"""The data-only boundary between the scheduler and a model runner."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlcx.runtime.kv import PageTableArrays


@dataclass(frozen=True, eq=False)
class ForwardBatch:
    """One step: new tokens of each scheduled sequence, their page tables, page copies to do
    first, and which new-token rows need logits (each sequence's last row by default)."""

    input_ids: np.ndarray  # int32 [t]
    tables: PageTableArrays
    copies: list[tuple[int, int]] = field(default_factory=list)
    logit_rows: np.ndarray | None = None  # int32 [n]; None: each sequence's last new token

    def __post_init__(self) -> None:
        if len(self.input_ids) != self.tables.num_new_tokens:
            raise ValueError(
                f"{len(self.input_ids)} input ids for {self.tables.num_new_tokens} new tokens"
            )

    @property
    def is_decode(self) -> bool:
        """Every sequence computes exactly one new token."""
        return self.tables.num_new_tokens == self.tables.batch_size

    def step_inputs(self) -> tuple[np.ndarray, ...]:
        """The arrays every compiled step function takes first, in their parameter order:
        input_ids, positions, slots, q_indptr, page_indptr, page_values, last_page_len."""
        t = self.tables
        return (
            self.input_ids,
            t.positions,
            t.slots,
            t.q_indptr,
            t.page_indptr,
            t.page_values,
            t.last_page_len,
        )

    @property
    def rows(self) -> np.ndarray:
        return self.tables.logit_positions if self.logit_rows is None else self.logit_rows
