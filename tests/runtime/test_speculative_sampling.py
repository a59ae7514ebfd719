"""Speculative rejection sampling keeps the target's distribution, checked by chi-square
tests at significance 0.001 on a 6-token vocabulary (fixed seeds, so the outcome is
reproducible). The expected probabilities are written out here independently of the sampler:
softmax of (logits - presence penalty) / temperature, cut to the top 4 tokens.

For a draft d0 d1 verified against rows p0 p1 p2: the first emitted token must follow p0,
and, given that it is d0 (kept), the next one must follow p1 computed with d0 already in the
output (the presence penalty sees it). Both for certain proposals (prompt lookup: q one-hot)
and for drafts drawn from a proposal distribution q."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.speculative.rejection import verify
from mlcx.runtime.speculative.verify import verify_batch

ALPHA = 0.001
TRIALS = 8000
LOGITS = np.array(
    [
        [1.0, 0.2, -0.5, 0.8, 0.0, -2.0],
        [0.1, 1.2, 0.3, -0.4, 0.9, 0.0],
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
    ],
    dtype=np.float32,
)
PARAMS = SamplingParams(temperature=0.8, top_k=4, presence_penalty=0.7, seed=5)
Q = np.array([[0.05, 0.1, 0.3, 0.05, 0.4, 0.1], [0.3, 0.1, 0.2, 0.2, 0.1, 0.1]])


def expected(row: np.ndarray, output: list[int]) -> np.ndarray:
    z = row.astype(np.float64).copy()
    z[sorted(set(output))] -= PARAMS.presence_penalty
    z /= PARAMS.temperature
    keep = np.argsort(-z)[:4]
    p = np.zeros_like(z)
    p[keep] = np.exp(z[keep] - z[keep].max())
    return p / p.sum()


def check(counts: np.ndarray, probs: np.ndarray) -> None:
    support = probs > 0
    assert counts[~support].sum() == 0, "a token outside the target's support was emitted"
    _, pvalue = chisquare(counts[support], probs[support] * counts.sum())
    assert pvalue > ALPHA, (counts, probs * counts.sum())


@pytest.mark.parametrize("proposal", ["certain", "distribution"])
def test_emitted_tokens_follow_the_target_distribution(proposal):
    state = SamplingState(PARAMS, [0, 0])
    draft_rng = np.random.default_rng(17)
    first, second = np.zeros(6, int), np.zeros(6, int)
    fixed = (3, 1)  # a likely first token, then a middling one
    for _ in range(TRIALS):
        if proposal == "certain":
            draft, q = fixed, None
        else:
            draft = tuple(int(draft_rng.choice(6, p=row)) for row in Q)
            q = Q
        [tokens] = verify_batch(LOGITS, [0], [state], [draft], [q])
        assert tokens[:-1] == list(draft[: len(tokens) - 1])
        first[tokens[0]] += 1
        if len(tokens) > 1 and tokens[0] == draft[0]:
            second[tokens[1]] += 1
        assert state.output_ids == []  # drafts tried for the penalties are taken back
    check(first, expected(LOGITS[0], []))
    d0 = fixed[0] if proposal == "certain" else None
    if d0 is not None:
        check(second, expected(LOGITS[1], [d0]))
    assert second.sum() > 1000


def test_second_token_given_each_kept_first_token():
    """With drafts from q, the token after a kept d0 follows p1 given d0, for every d0."""
    state = SamplingState(PARAMS, [0, 0])
    draft_rng = np.random.default_rng(3)
    seconds = {t: np.zeros(6, int) for t in range(6)}
    for _ in range(3 * TRIALS):
        draft = tuple(int(draft_rng.choice(6, p=row)) for row in Q)
        [tokens] = verify_batch(LOGITS, [0], [state], [draft], [Q])
        if len(tokens) > 1:
            seconds[tokens[0]][tokens[1]] += 1
    tested = 0
    for d0, counts in seconds.items():
        if counts.sum() >= 500:
            check(counts, expected(LOGITS[1], [d0]))
            tested += 1
    assert tested >= 2


def test_greedy_keeps_the_argmax_prefix_without_drawing():
    p = np.eye(4)[[2, 0, 3]]
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    assert verify(p, (2, 0), None, rng, greedy=True) == [2, 0, 3]
    assert verify(p, (2, 1), None, rng, greedy=True) == [2, 0]
    assert verify(p, (1, 0), None, rng, greedy=True) == [2]
    assert rng.bit_generator.state == before
