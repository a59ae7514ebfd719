"""Sampler against independent references: Hugging Face logits processors run with torch,
OpenAI's documented presence/frequency formula, and empirical draw frequencies."""

import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import (
    SampleResult,
    SamplingState,
    processed_logits,
    processed_probs,
    sample,
)
from tests.support.sampler_inputs import VOCAB
from tests.support.sampler_inputs import random_logits as _logits
from tests.support.sampler_inputs import sampling_state as _state


def _history(seed: int, vocab: int = VOCAB) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, 40).tolist(), rng.integers(0, vocab, 30).tolist()


def _ref_processed(logits: np.ndarray, p: SamplingParams, prompt, output) -> torch.Tensor:
    """Bias, then HF repetition penalty, then OpenAI's presence/frequency formula."""
    scores = torch.from_numpy(logits.astype(np.float64))[None].clone()
    for token, bias in (p.logit_bias or {}).items():
        scores[0, token] += bias
    history = list(prompt) + list(output)
    if p.repetition_penalty != 1.0 and history:
        proc = RepetitionPenaltyLogitsProcessor(penalty=p.repetition_penalty)
        scores = proc(torch.tensor([history]), scores)
    # OpenAI: mu[j] -= c[j] * frequency_penalty + float(c[j] > 0) * presence_penalty
    counts = torch.bincount(torch.tensor(list(output), dtype=torch.long), minlength=len(logits))
    counts = counts.to(torch.float64)[None]
    return scores - counts * p.frequency_penalty - (counts > 0).double() * p.presence_penalty


def _ref_probs(logits: np.ndarray, p: SamplingParams, prompt=(), output=()) -> np.ndarray:
    scores = _ref_processed(logits, p, prompt, output)
    if p.temperature == 0:
        return torch.nn.functional.one_hot(scores.argmax(-1), len(logits))[0].double().numpy()
    ids = torch.zeros((1, 1), dtype=torch.long)  # the warpers below ignore input_ids
    scores = TemperatureLogitsWarper(p.temperature)(ids, scores)
    if p.top_k > 0:
        scores = TopKLogitsWarper(p.top_k)(ids, scores)
    if p.top_p < 1.0:
        scores = TopPLogitsWarper(p.top_p)(ids, scores)
    if p.min_p > 0.0:
        scores = MinPLogitsWarper(p.min_p)(ids, scores)
    return torch.softmax(scores, dim=-1)[0].numpy()


CONFIGS = {
    "plain": SamplingParams(),
    "temperature": SamplingParams(temperature=0.6),
    "hot": SamplingParams(temperature=1.7),
    "top_k": SamplingParams(top_k=7),
    "top_k_large": SamplingParams(top_k=600, temperature=0.8),
    "top_p": SamplingParams(top_p=0.8),
    "top_p_tiny": SamplingParams(top_p=0.01),
    "min_p": SamplingParams(min_p=0.1),
    "k_p_minp": SamplingParams(temperature=0.7, top_k=50, top_p=0.9, min_p=0.05),
    "repetition": SamplingParams(repetition_penalty=1.3),
    "repetition_below_1": SamplingParams(repetition_penalty=0.7, top_p=0.95),
    "presence_frequency": SamplingParams(presence_penalty=1.5, frequency_penalty=-0.7),
    "bias": SamplingParams(logit_bias={3: 100.0, 4: -100.0, 5: 2.5}, top_k=20),
    "everything": SamplingParams(
        temperature=0.9,
        top_k=100,
        top_p=0.92,
        min_p=0.02,
        repetition_penalty=1.2,
        presence_penalty=0.4,
        frequency_penalty=0.3,
        logit_bias={7: 5.0},
    ),
    "greedy_penalized": SamplingParams.greedy(repetition_penalty=1.5, frequency_penalty=1.0),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_processed_probs_match_hf_reference(name):
    p = CONFIGS[name]
    logits = _logits(1, seed=len(name))
    prompt, output = _history(seed=len(name))
    ours = processed_probs(logits, [_state(p, prompt, output)])[0]
    ref = _ref_probs(logits[0], p, prompt, output)
    np.testing.assert_array_equal(ours > 0, ref > 0)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6)


def test_mixed_batch_matches_per_row_reference():
    names = list(CONFIGS)
    logits = _logits(len(names), seed=1)
    histories = [_history(seed=i) for i in range(len(names))]
    states = [_state(CONFIGS[n], *h) for n, h in zip(names, histories, strict=True)]
    ours = processed_probs(logits, states)
    for i, name in enumerate(names):
        ref = _ref_probs(logits[i], CONFIGS[name], *histories[i])
        np.testing.assert_array_equal(ours[i] > 0, ref > 0, err_msg=name)
        np.testing.assert_allclose(ours[i], ref, rtol=0, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=0.7, top_p=0.9),  # small nucleus: first candidate bucket
        SamplingParams(temperature=1.0, top_p=0.9),  # nucleus of a few thousand tokens
        SamplingParams(temperature=2.0, top_p=0.95),  # flat: falls back to a full sort
        SamplingParams(top_k=2000, top_p=0.5, min_p=0.001),
    ],
)
def test_large_vocab_top_p_matches_hf(params):
    vocab = 49152
    logits = _logits(2, vocab=vocab, seed=7)
    ours = processed_probs(logits, [_state(params), _state(params)])
    for i in range(2):
        ref = _ref_probs(logits[i], params)
        np.testing.assert_array_equal(ours[i] > 0, ref > 0)
        np.testing.assert_allclose(ours[i], ref, rtol=0, atol=1e-6)


def test_top_k_keeps_ties_like_hf():
    logits = np.array([[1.0, 3.0, 2.0, 3.0, 2.0, 2.0, 0.5]], dtype=np.float32)
    p = SamplingParams(top_k=3)
    ours = processed_probs(logits, [_state(p)])[0]
    np.testing.assert_allclose(ours, _ref_probs(logits[0], p), atol=1e-7)
    assert np.count_nonzero(ours) == 5  # 3, 3 and the three tied 2s


def test_greedy_is_argmax_with_lowest_id_on_ties():
    logits = _logits(4, seed=3)
    logits[2, [10, 20]] = logits[2].max() + 1.0
    states = [_state(SamplingParams.greedy()) for _ in range(4)]
    tokens = [r.token_id for r in sample(logits, states)]
    assert tokens == np.argmax(logits, axis=1).tolist()
    assert tokens[2] == 10


def test_greedy_uses_penalized_logits():
    logits = np.array([[5.0, 4.9, 0.0]], dtype=np.float32)
    state = _state(SamplingParams.greedy(presence_penalty=1.0), output=[0])
    assert sample(logits, [state])[0].token_id == 1


def _spread_logits() -> np.ndarray:
    """A few likely tokens scattered over many draw blocks, the rest masked or negligible."""
    logits = np.full((1, 3000), -np.inf, np.float32)
    logits[0, 1000:1500] = -30.0
    logits[0, [3, 255, 256, 700, 2047, 2999]] = np.log([0.1, 0.2, 0.15, 0.3, 0.05, 0.2])
    return logits


@pytest.mark.parametrize(
    ("params", "logits"),
    [
        (SamplingParams(seed=123), None),
        (SamplingParams(seed=321, temperature=0.8, top_k=5, top_p=0.9), None),
        (SamplingParams(seed=7, temperature=1.3), _spread_logits()),
    ],
)
def test_empirical_frequencies_match_distribution(params, logits):
    draws, copies = 20_000, 50
    if logits is None:
        logits = np.log(np.array([[0.05, 0.3, 0.1, 0.25, 0.02, 0.18, 0.07, 0.03]], np.float32))
    expected = processed_probs(logits, [_state(params)])[0]
    np.testing.assert_allclose(expected, _ref_probs(logits[0], params), atol=1e-6)
    kept = expected > 1e-6  # tokens at -30 are all but impossible and must not skew chi2
    # One state per copy, seeded seed + i like the choices of a request: independent draws.
    states = [SamplingState(params.with_updates(seed=params.seed + i)) for i in range(copies)]
    batch = np.repeat(logits, copies, axis=0)
    counts = np.zeros(logits.shape[1])
    for _ in range(draws // copies):
        for r in sample(batch, states):
            counts[r.token_id] += 1
    assert counts[expected == 0].sum() == 0
    chi2 = float((((counts - draws * expected) ** 2)[kept] / (draws * expected[kept])).sum())
    dof = int(kept.sum()) - 1
    # Loose bound: mean dof, standard deviation sqrt(2 dof); 6 deviations is far in the tail.
    assert chi2 < dof + 6 * np.sqrt(2 * dof)


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(logprobs=True, top_logprobs=5, temperature=0.5, top_k=3),
        SamplingParams.greedy(logprobs=True, top_logprobs=20, repetition_penalty=1.4),
        SamplingParams(logprobs=True, presence_penalty=1.0, logit_bias={2: 3.0}, seed=1),
    ],
)
def test_logprobs_are_log_softmax_of_processed_logits(params):
    logits = _logits(1, seed=4)
    prompt, output = _history(seed=4)
    result = sample(logits, [_state(params, prompt, output)])[0]
    ref = torch.log_softmax(_ref_processed(logits[0], params, prompt, output)[0], dim=-1)
    assert result.logprob == pytest.approx(float(ref[result.token_id]), abs=1e-5)
    if params.top_logprobs == 0:
        assert result.top_logprobs is None
        return
    values, ids = torch.topk(ref, params.top_logprobs)
    assert [t for t, _ in result.top_logprobs] == ids.tolist()
    np.testing.assert_allclose([v for _, v in result.top_logprobs], values.numpy(), atol=1e-5)


def test_no_logprobs_unless_asked():
    result = sample(_logits(1), [_state(SamplingParams())])[0]
    assert result == SampleResult(result.token_id, None, None)


def test_masked_tokens_are_never_drawn():
    logits = np.full((1, 100), -np.inf, dtype=np.float32)
    logits[0, [17, 42]] = [0.0, 0.1]
    state = _state(SamplingParams(seed=0))
    assert {sample(logits, [state])[0].token_id for _ in range(200)} == {17, 42}


def test_append_updates_counts_used_by_penalties():
    state = _state(SamplingParams(frequency_penalty=1.0), prompt=[1])
    for token in (3, 3, 5):
        state.append(token)
    x = processed_logits(np.zeros((1, 8), np.float32), [state])[0]
    np.testing.assert_array_equal(x, [0, 0, 0, -2, 0, -1, 0, 0])
    assert state.output_ids == [3, 3, 5]


def test_sample_does_not_modify_logits():
    logits = _logits(2)
    before = logits.copy()
    sample(logits, [_state(SamplingParams(top_p=0.5)), _state(SamplingParams(logprobs=True))])
    np.testing.assert_array_equal(logits, before)


@pytest.mark.parametrize(
    ("logits", "states", "match"),
    [
        (np.zeros((2, 10), np.float32), [SamplingParams()], "logits"),
        (np.zeros(10, np.float32), [SamplingParams()], "logits"),
        (np.zeros((1, 10), np.int32), [SamplingParams()], "logits"),
        (np.array([[0.0, np.nan]], np.float32), [SamplingParams()], "NaN"),
        (np.array([[0.0, np.inf]], np.float32), [SamplingParams()], "inf"),
        (np.full((1, 4), -np.inf, np.float32), [SamplingParams()], "finite"),
        (np.zeros((1, 10), np.float32), [SamplingParams(logit_bias={10: 1.0})], "logit_bias"),
        (np.zeros((1, 10), np.float32), [SamplingParams(stop_token_ids=(12,))], "stop_token_ids"),
    ],
)
def test_bad_inputs_raise(logits, states, match):
    with pytest.raises(ValueError, match=match):
        sample(logits, [_state(p) for p in states])


def test_token_ids_out_of_vocab_raise():
    with pytest.raises(ValueError, match="token ids"):
        sample(np.zeros((1, 10), np.float32), [_state(SamplingParams(), prompt=[3, 10])])
    state = _state(SamplingParams())
    sample(np.zeros((1, 10), np.float32), [state])
    state.append(11)
    with pytest.raises(ValueError, match="token ids"):
        sample(np.zeros((1, 10), np.float32), [state])


def test_state_validation():
    with pytest.raises(ValueError, match="choice_index"):
        SamplingState(SamplingParams(n=2), choice_index=2)
    with pytest.raises(ValueError, match="prompt_ids"):
        SamplingState(SamplingParams(), [-1])
    with pytest.raises(ValueError, match="token_id"):
        _state(SamplingParams()).append(-5)


def test_empty_batch():
    assert sample(np.zeros((0, 10), np.float32), []) == []
