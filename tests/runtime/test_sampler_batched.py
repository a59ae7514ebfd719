"""The batched sampler picks, for every row, exactly the token that row picks sampled alone,
and the token a plain numpy reference of the documented semantics picks: greedy argmax, or
temperature -> top_k -> top_p -> min_p (ties at a cutoff kept) and one uniform draw from the
row's own seeded generator over the kept tokens in id order."""

import numpy as np
import pytest

from mlcx.runtime.sample.logits_buffer import LogitsBuffer
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import SamplingState, sample
from tests.support.sampler_inputs import random_logits

MIXED = [
    SamplingParams.greedy(),
    SamplingParams(seed=1),
    SamplingParams(seed=2, temperature=0.7, top_p=0.9),
    SamplingParams(seed=3, temperature=1.3, top_k=40),
    SamplingParams(seed=4, temperature=0.8, top_k=200, top_p=0.8, min_p=0.01),
    SamplingParams(seed=5, min_p=0.05),
    SamplingParams(seed=6, temperature=2.0, top_p=0.99),  # flat: a large nucleus
    SamplingParams(seed=7, top_p=0.01),
    SamplingParams.greedy(logprobs=True, top_logprobs=3),
    SamplingParams(seed=8, temperature=0.5, top_p=0.95, logprobs=True),
]


def _reference_weights(row: np.ndarray, p: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """Kept token ids (ascending) and their relative weights, by full sorts."""
    z = (row - row.max()) * np.float32(1.0 / p.temperature)
    weights = np.exp(z)
    keep = np.ones(row.size, bool)
    if 0 < p.top_k < row.size:
        keep &= z >= np.sort(z)[::-1][p.top_k - 1]
    w = np.where(keep, weights, 0).astype(np.float64)
    if p.top_p < 1.0:
        desc = np.sort(w)[::-1]
        before = np.cumsum(desc) - desc  # mass ranked above each token
        keep &= w >= desc[before < p.top_p * w.sum()].min()
    keep &= weights >= np.float32(p.min_p)
    ids = np.flatnonzero(keep)
    return ids, w[ids]


def _reference(logits: np.ndarray, params: list[SamplingParams], steps: int) -> list[list[int]]:
    rngs = [np.random.default_rng(p.seed) for p in params]
    tokens = []
    for step in range(steps):
        picked = []
        for row, p, rng in zip(logits[step], params, rngs, strict=True):
            if p.is_greedy:
                picked.append(int(np.argmax(row)))
                continue
            ids, w = _reference_weights(row, p)
            cum = np.cumsum(w)
            picked.append(int(ids[np.searchsorted(cum, rng.random() * cum[-1], side="right")]))
        tokens.append(picked)
    return tokens


def _batched(logits, params, steps, scratch=None) -> tuple[list[list[int]], list]:
    states = [SamplingState(p) for p in params]
    tokens, results = [], []
    for step in range(steps):
        out = sample(logits[step], states, scratch=scratch)
        for state, r in zip(states, out, strict=True):
            state.append(r.token_id)
        tokens.append([r.token_id for r in out])
        results.append(out)
    return tokens, results


def _alone(logits, params, steps) -> tuple[list[list[int]], list]:
    columns = [_batched(logits[:, i : i + 1], [p], steps) for i, p in enumerate(params)]
    tokens = [[col[0][s][0] for col in columns] for s in range(steps)]
    results = [[col[1][s][0] for col in columns] for s in range(steps)]
    return tokens, results


@pytest.mark.parametrize(("vocab", "scale"), [(1000, 3.0), (49152, 4.0), (49152, 1.0)])
def test_batch_matches_rows_alone_and_reference(vocab, scale):
    steps = 4
    logits = random_logits(steps * len(MIXED), vocab=vocab, scale=scale, seed=vocab)
    logits = logits.reshape(steps, len(MIXED), vocab)
    batched, batched_results = _batched(logits, MIXED, steps, LogitsBuffer())
    alone, alone_results = _alone(logits, MIXED, steps)
    assert batched == alone
    assert batched_results == alone_results  # logprobs too
    assert batched == _reference(logits, MIXED, steps)


@pytest.mark.parametrize(
    "bad", [[0.0, np.nan, 1.0], [0.0, np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]
)
def test_greedy_batch_read_in_place_still_rejects_bad_rows(bad):
    logits = np.array([[0.0, 1.0, 2.0], bad], np.float32)
    states = [SamplingState(SamplingParams.greedy()) for _ in range(2)]
    with pytest.raises(ValueError, match="row 1"):
        sample(logits, states)


def test_scratch_leaves_logits_alone():
    logits = random_logits(len(MIXED), vocab=3000, seed=2)
    before = logits.copy()
    scratch = LogitsBuffer()
    for _ in range(2):
        sample(logits, [SamplingState(p) for p in MIXED], scratch=scratch)
    np.testing.assert_array_equal(logits, before)


def test_batch_with_penalties_matches_rows_alone():
    # a penalized row makes the batch go through the scratch copy
    params = [
        *MIXED,
        SamplingParams.greedy(repetition_penalty=1.5, frequency_penalty=0.5),
        SamplingParams(seed=9, presence_penalty=1.0, logit_bias={5: 3.0}, top_p=0.9),
    ]
    steps = 5
    logits = random_logits(steps * len(params), vocab=5000, seed=3)
    logits = logits.reshape(steps, len(params), 5000)
    batched = _batched(logits, params, steps, LogitsBuffer())
    assert batched == _alone(logits, params, steps)
