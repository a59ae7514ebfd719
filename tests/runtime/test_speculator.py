"""How many tokens the speculator drafts: the most for a proposer that is always right, down
to a probe every PROBE_EVERY steps for one that is always wrong, none under load."""

from __future__ import annotations

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.speculative.proposer import Draft, DraftRequest
from mlcx.runtime.speculative.speculator import PROBE_EVERY, Speculator, best_length


class Fixed:
    """Drafts k copies of token 7 and remembers the lengths asked for."""

    def __init__(self):
        self.asked: list[int] = []
        self.released: list[set] = []

    def propose(self, requests):
        self.asked += [req.k for req in requests]
        return {req.seq_id: Draft((7,) * req.k) for req in requests}

    def release(self, live):
        self.released.append(set(live))


def run(kept_fraction: float, steps: int, cost: float = 0.45) -> list[int]:
    proposer = Fixed()
    spec = Speculator(proposer, 3, 4, token_cost=cost)
    state = SamplingState(SamplingParams.greedy())
    lengths = []
    for _ in range(steps):
        drafts = spec.propose([DraftRequest(0, [1, 2, 3], 100, state)], running=1)
        draft = drafts[0].tokens if drafts else ()
        lengths.append(len(draft))
        kept = round(kept_fraction * len(draft))
        spec.record([0], [draft], [[7] * kept + [8]])
    return lengths


def test_best_length_weighs_acceptance_against_cost():
    assert best_length(0.3, 3, 0.45) == 0
    assert best_length(0.95, 3, 0.45) == 3
    assert best_length(0.3, 3, 0.0) == 3  # free verification: always the most
    assert [best_length(a, 5, 0.45) for a in (0.5, 0.8, 0.9)] == [1, 2, 3]


def test_an_always_right_proposer_drafts_the_most():
    lengths = run(1.0, 20)
    assert lengths[0] == 1 and lengths[-10:] == [3] * 10


def test_an_always_wrong_proposer_is_only_probed():
    lengths = run(0.0, 40)
    tail = lengths[10:]
    assert set(tail) == {0, 1} and tail.count(1) == len(tail) // PROBE_EVERY


def test_no_drafts_under_load_and_finished_sequences_are_forgotten():
    proposer = Fixed()
    spec = Speculator(proposer, 3, 4, token_cost=0.45)
    state = SamplingState(SamplingParams.greedy())
    assert spec.propose([DraftRequest(0, [1, 2, 3], 100, state)], running=5) == {}
    assert spec.stats.off_steps == 1 and proposer.asked == []
    spec.propose([DraftRequest(0, [1, 2, 3], 2, state)], running=1)
    assert proposer.asked == [1]  # PRIOR 0.7 asks for one token, within the room of 2
    spec.record([0], [(7,)], [[7, 8]])
    spec.release(())
    assert proposer.released[-1] == set() and spec._acceptance == {}
