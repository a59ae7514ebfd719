"""The engine's side of speculative decoding: how many tokens to draft for each sequence, and
what was proposed and kept.

Verifying k drafted tokens costs about 1 + c * k decode steps (c: `token_cost`, the price of
one more token in a step relative to a whole decode step: ~0.25 on a 2-core CPU, where the
kernels are compute bound from a few tokens on, near 0 on a GPU) and yields sum(a^i, i =
0..k) tokens on average when each draft token is kept with probability a. Each sequence
keeps a moving estimate of a and drafts the k that maximizes tokens per cost: fewer, or
none, when its drafts keep being rejected (then it probes with one token every PROBE_EVERY
steps to notice when they would pay again). No drafts at all while more than `max_batch`
sequences run: a large batch already reads each weight once for many tokens."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from mlcx.runtime.speculative.config import SpeculativeConfig
from mlcx.runtime.speculative.proposer import Draft, DraftRequest, ProposalTarget, Proposer

PRIOR = 0.7  # the acceptance a sequence starts with: optimistic enough to try drafting
SMOOTHING = 0.5  # weight of the latest step in the moving estimate
PROBE_EVERY = 8


@dataclass
class SpeculationStats:
    proposed_tokens: int = 0  # drafted tokens the target verified
    accepted_tokens: int = 0  # of those, kept
    off_steps: int = 0  # steps without drafts because the running batch was too large


def best_length(acceptance: float, most: int, token_cost: float) -> int:
    """The draft length in 0..most with the most expected tokens per unit of step cost."""

    def value(k: int) -> float:
        return sum(acceptance**i for i in range(k + 1)) / (1.0 + token_cost * k)

    return max(range(most + 1), key=value)


class Speculator:
    def __init__(
        self, proposer: Proposer, num_speculative: int, max_batch: int, token_cost: float = 0.25
    ):
        self.proposer = proposer
        self.num_speculative = num_speculative
        self.max_batch = max_batch
        self.token_cost = token_cost
        self.stats = SpeculationStats()
        self._acceptance: dict[int, float] = {}  # by seq_id
        self._idle: dict[int, int] = {}  # steps since the sequence last drafted

    @classmethod
    def from_config(cls, config: SpeculativeConfig, target: ProposalTarget) -> Speculator:
        proposer = config.proposer(target)
        return cls(proposer, config.num_tokens, config.max_batch, config.token_cost)

    def propose(self, requests: list[DraftRequest], running: int) -> dict[int, Draft]:
        """Drafts for `requests`, each `k` its room for tokens (it drafts fewer)."""
        if running > self.max_batch:
            self.stats.off_steps += 1
            self.release(())
            return {}
        self.release({req.seq_id for req in requests})
        wanted = []
        for req in requests:
            k = min(req.k, self._length(req.seq_id))
            self._idle[req.seq_id] = 0 if k else self._idle.get(req.seq_id, 0) + 1
            if k:
                wanted.append(replace(req, k=k))
        return self.proposer.propose(wanted) if wanted else {}

    def _length(self, seq_id: int) -> int:
        acceptance = self._acceptance.get(seq_id, PRIOR)
        k = best_length(acceptance, self.num_speculative, self.token_cost)
        if k == 0 and self._idle.get(seq_id, 0) + 1 >= PROBE_EVERY:
            return 1
        return k

    def record(self, seq_ids: list[int], drafts: list[tuple[int, ...]], kept: list[list[int]]):
        """Count a step's verified drafts and update each sequence's acceptance estimate."""
        for seq_id, draft, tokens in zip(seq_ids, drafts, kept, strict=True):
            if not draft:
                continue
            accepted = len(tokens) - 1
            self.stats.proposed_tokens += len(draft)
            self.stats.accepted_tokens += accepted
            before = self._acceptance.get(seq_id, PRIOR)
            observed = accepted / len(draft)
            self._acceptance[seq_id] = (1 - SMOOTHING) * before + SMOOTHING * observed

    def release(self, live: Collection[int]) -> None:
        """Forget the sequences not in `live`, here and in the proposer."""
        for table in (self._acceptance, self._idle):
            for seq_id in [s for s in table if s not in live]:
                del table[seq_id]
        self.proposer.release(live)
