"""Speculative decoding settings, validated once, and the registry of proposers they name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlcx.runtime.speculative.proposer import ProposalTarget, Proposer

# Most tokens drafted per sequence and step unless asked otherwise: 8 because verifying 9
# tokens costs ~3 decode steps on the 2-core CPU (row-tiled kernels), so long agreeing drafts
# (echoed text) pay, and the speculator drafts fewer where they are rejected.
DEFAULT_NUM_SPECULATIVE = 8


@dataclass(frozen=True)
class SpeculativeConfig:
    method: str  # the proposer of draft tokens: a name in PROPOSERS
    num_tokens: int = DEFAULT_NUM_SPECULATIVE  # most tokens drafted per sequence and step
    draft: str | None = None  # the draft model's artifact directory (method "draft")
    max_batch: int = 4  # no drafts while more sequences than this are running
    # one more verified token's cost relative to a decode step (speculator.py; 0.22-0.26
    # measured on the 2-core CPU with row-tiled kernels): picks each sequence's draft length
    # from its acceptance; 0: always the most
    token_cost: float = 0.25

    def __post_init__(self) -> None:
        if self.method not in PROPOSERS:
            raise ValueError(
                f"unknown speculative proposer {self.method!r}; choose from {', '.join(PROPOSERS)}"
            )
        for name in ("num_tokens", "max_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"speculative {name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.token_cost < 1.0:
            raise ValueError(f"speculative token_cost must be in [0, 1), got {self.token_cost}")
        if (self.method == "draft") != (self.draft is not None):
            raise ValueError(
                "a draft model goes with the draft proposer (--speculative draft --draft "
                "ARTIFACT), and only with it"
            )

    def proposer(self, target: ProposalTarget) -> Proposer:
        return PROPOSERS[self.method](self, target)


def _ngram(config: SpeculativeConfig, target: ProposalTarget) -> Proposer:
    from mlcx.runtime.speculative.ngram import NgramProposer

    return NgramProposer()


def _draft(config: SpeculativeConfig, target: ProposalTarget) -> Proposer:
    from mlcx.runtime.speculative.draft import DraftProposer

    if config.draft is None:
        raise ValueError("the draft proposer needs a draft model")
    return DraftProposer.for_target(config.draft, target, config.max_batch)


PROPOSERS: dict[str, Callable[[SpeculativeConfig, ProposalTarget], Proposer]] = {
    "ngram": _ngram,
    "draft": _draft,
}
