"""The engine's side of speculative decoding: asks the proposer for drafts when the batch is
small enough for them to pay, and counts what was proposed and kept."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.runtime.speculative.proposer import Draft, DraftRequest, Proposer


@dataclass
class SpeculationStats:
    proposed_tokens: int = 0  # drafted tokens the target verified
    accepted_tokens: int = 0  # of those, kept
    off_steps: int = 0  # steps without drafts because the running batch was too large


class Speculator:
    def __init__(self, proposer: Proposer, num_speculative: int, max_batch: int):
        self.proposer = proposer
        self.num_speculative = num_speculative
        self.max_batch = max_batch
        self.stats = SpeculationStats()

    def propose(self, requests: list[DraftRequest], running: int) -> dict[int, Draft]:
        """Drafts for `requests` (their room capped at num_speculative). None when more than
        max_batch sequences run: a large batch already reads each weight once for many
        tokens, and verifying drafts would only add work."""
        if running > self.max_batch:
            self.stats.off_steps += 1
            self.proposer.release(())
            return {}
        capped = [(seq, min(room, self.num_speculative), state) for seq, room, state in requests]
        self.proposer.release({seq.seq_id for seq, _, _ in requests})
        return self.proposer.propose(capped)

    def record(self, drafts: list[tuple[int, ...]], tokens: list[list[int]]) -> None:
        """Count a step's verified drafts and the tokens each sample kept of them."""
        for draft, kept in zip(drafts, tokens, strict=True):
            if draft:
                self.stats.proposed_tokens += len(draft)
                self.stats.accepted_tokens += len(kept) - 1
