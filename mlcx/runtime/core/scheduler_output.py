"""What one scheduling step hands on: the scheduled items (new tokens, drafted tokens, choices
to sample), page copies, preemptions; and the scheduler's counters."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlcx.runtime.core.sequence import Sequence
from mlcx.runtime.state import NO_STEP, StateStep


@dataclass(frozen=True)
class Scheduled:
    seq: Sequence
    input_ids: tuple[int, ...]  # the tokens this step computes
    # Choices sampled from this sequence's logits row after the step: none mid-prefill, all n
    # at an n > 1 request's first sample (the others fork then), else the sequence's own.
    choices: tuple[int, ...] = ()
    draft: tuple[int, ...] = ()  # drafted tokens, the last of `input_ids`, to verify

    @property
    def num_new(self) -> int:
        return len(self.input_ids)

    @property
    def num_rows(self) -> int:
        """Logit rows of this item: its last token's, and one per drafted token."""
        return 1 + len(self.draft)


@dataclass
class SchedulerOutput:
    scheduled: list[Scheduled] = field(default_factory=list)
    copies: list[tuple[int, int]] = field(default_factory=list)  # KV page copies, in order
    preempted: list[Sequence] = field(default_factory=list)
    # a hybrid model's state slots in step order, and the state copies to do first
    state: StateStep = NO_STEP

    @property
    def samples(self) -> list[tuple[int, str, int]]:
        """(first logits row, request id, choice index) of each sample, in the order
        `update_from_output` takes them; a drafted item's rows follow its first."""
        starts = np.cumsum([0] + [item.num_rows for item in self.scheduled]).tolist()
        return [
            (starts[i], item.seq.request_id, index)
            for i, item in enumerate(self.scheduled)
            for index in item.choices
        ]

    @property
    def drafts(self) -> list[tuple[int, ...]]:
        """The drafted tokens verified by each sample, aligned with `samples`."""
        return [item.draft for item in self.scheduled for _ in item.choices]

    @property
    def verifies_every_token(self) -> bool:
        """Drafts are verified and every new token has a logits row (no prefill chunk in the
        step): the step may run as one decode row per token."""
        drafted = any(item.draft for item in self.scheduled)
        return drafted and all(item.num_rows == item.num_new for item in self.scheduled)

    def first_sample_tokens(self, tokens: list[list[int]]) -> list[list[int]]:
        """Each scheduled item's first sample's tokens ([] for a prefill chunk), from the
        tokens of every sample."""
        per_item, i = [], 0
        for item in self.scheduled:
            per_item.append(tokens[i] if item.choices else [])
            i += len(item.choices)
        return per_item

    def logit_rows(self) -> np.ndarray | None:
        """Rows among the new tokens to compute logits for; None (each sequence's last token)
        when nothing is drafted."""
        if not any(item.draft for item in self.scheduled):
            return None
        ends = np.cumsum([item.num_new for item in self.scheduled]).tolist()
        counts = [item.num_rows for item in self.scheduled]
        rows = [r for end, n in zip(ends, counts, strict=True) for r in range(end - n, end)]
        return np.array(rows, dtype=np.int32)


@dataclass
class SchedulerStats:
    # The one prefix-cache hit counter (/metrics reports it): tokens whose KV a sequence found
    # in the prefix cache when it was admitted. Failed admissions (retried next step) are not
    # counted; a preempted sequence counts again when recomputed, its own blocks being hits.
    prefix_hit_tokens: int = 0
    prefix_query_tokens: int = 0  # tokens (prompt, plus output when recomputed) at admissions
    preemptions: int = 0
    prompt_tokens: int = 0  # prompt tokens of requests that produced a first token
    generated_tokens: int = 0
    computed_tokens: int = 0  # tokens run through the model (prefill chunks and decodes)
