"""Seeded sampling: reproducible per seed, choice i of a request draws like seed + i, and a
row's draw does not depend on the other rows of the batch."""

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import SamplingState, sample
from tests.support.sampler_inputs import random_logits as _logits
from tests.support.sampler_inputs import sampling_state as _state


def _run(params: SamplingParams, steps: int, choice_index: int = 0) -> list[int]:
    logits = _logits(steps, vocab=50, scale=0.5, seed=11)
    state = SamplingState(params, choice_index=choice_index)
    tokens = []
    for step in range(steps):
        token = sample(logits[step : step + 1], [state])[0].token_id
        state.append(token)
        tokens.append(token)
    return tokens


def test_seeded_sampling_is_reproducible():
    assert _run(SamplingParams(seed=42), 50) == _run(SamplingParams(seed=42), 50)
    assert _run(SamplingParams(seed=42), 50) != _run(SamplingParams(seed=43), 50)


def test_choice_i_uses_seed_plus_i():
    params = SamplingParams(seed=42, n=3)
    states = SamplingState.for_request(params, [1, 2])
    assert [s.choice_index for s in states] == [0, 1, 2]
    assert _run(params, 30, choice_index=2) == _run(SamplingParams(seed=44), 30)


def test_draws_do_not_depend_on_batch_neighbours():
    logits = _logits(3, vocab=50, scale=0.5, seed=5)
    alone = sample(logits[1:2], [_state(SamplingParams(seed=9))])[0].token_id
    neighbours = [
        _state(SamplingParams()),
        _state(SamplingParams(seed=9)),
        _state(SamplingParams.greedy()),
    ]
    assert sample(logits, neighbours)[1].token_id == alone
