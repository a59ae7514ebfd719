"""The proposer interface and registry: what drafts tokens for the target to verify."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from mlcx.runtime.sampling_state import SamplingState
from mlcx.runtime.sequence import Sequence

if TYPE_CHECKING:
    from mlcx.runtime.engine import Engine


@dataclass(frozen=True, eq=False)
class Draft:
    tokens: tuple[int, ...]
    # (k, vocab) the distribution each token was drawn from; None: proposed with certainty
    probs: np.ndarray | None = None


# (sequence, most tokens to draft for it, its sampling state)
DraftRequest = tuple[Sequence, int, SamplingState]


class Proposer(Protocol):
    def propose(self, requests: list[DraftRequest]) -> dict[int, Draft]:
        """Drafts by seq_id; a sequence may get none. Sequences are not modified."""
        ...

    def release(self, live: Collection[int]) -> None:
        """Forget every sequence whose seq_id is not in `live` (finished, preempted, or no
        longer drafted for)."""
        ...


def _ngram(engine: Engine) -> Proposer:
    from mlcx.runtime.speculative.ngram import NgramProposer

    return NgramProposer()


def _draft(engine: Engine) -> Proposer:
    from mlcx.runtime.speculative.draft import DraftProposer

    return DraftProposer.for_target(engine)


PROPOSERS: dict[str, Callable[[Engine], Proposer]] = {"ngram": _ngram, "draft": _draft}
PROPOSER_NAMES = tuple(PROPOSERS)
# Most tokens drafted per sequence and step unless asked otherwise: 8 because verifying 9
# tokens costs ~3 decode steps on the 2-core CPU (row-tiled kernels), so long agreeing drafts
# (echoed text) pay, and the speculator drafts fewer where they are rejected.
DEFAULT_NUM_SPECULATIVE = 8
