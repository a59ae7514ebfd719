"""The proposer interface: what drafts tokens for the target to verify, and the values it is
given (the target, described; each sequence to draft for) and returns."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.text.tokenizer import Tokenizer


@dataclass(frozen=True)
class ProposalTarget:
    """What a proposer may know of the model it drafts for."""

    tokenizer: Tokenizer
    vocab_size: int  # logits per token
    context_window: int
    device: str | None  # the runner device override, for a draft model to run beside it


@dataclass(frozen=True, eq=False)
class Draft:
    tokens: tuple[int, ...]
    # (k, vocab) the distribution each token was drawn from; None: proposed with certainty
    probs: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class DraftRequest:
    seq_id: int
    token_ids: list[int]  # the sequence's prompt and output so far (not copied: read only)
    k: int  # most tokens to draft
    state: SamplingState  # the choice's sampling state (its parameters, penalties, generator)


class Proposer(Protocol):
    def propose(self, requests: list[DraftRequest]) -> dict[int, Draft]:
        """Drafts by seq_id; a sequence may get none. Requests are not modified."""
        ...

    def release(self, live: Collection[int]) -> None:
        """Forget every sequence whose seq_id is not in `live` (finished, preempted, or no
        longer drafted for)."""
        ...
