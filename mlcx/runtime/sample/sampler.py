"""Batched token sampling over numpy logits.

Per row, in this order: the constraint's token mask (disallowed tokens -> -inf) -> logit_bias
-> repetition penalty (Hugging Face semantics: prompt and output tokens, positive logits
divided, negative multiplied) -> presence/frequency penalties (OpenAI semantics: output tokens
only) -> greedy argmax when temperature == 0, otherwise temperature -> top_k -> top_p -> min_p
(see mlcx.runtime.sample.truncation) -> one draw from the sequence's own generator.

Reported logprobs are the log-softmax of the logits after mask, bias and penalties but before
temperature and truncation (vLLM's "processed logits" convention): they describe what the
model, the constraint and penalties made of the vocabulary, not the sampling distribution.
A constrained row's top_logprobs list only tokens the constraint allows (fewer than asked
when it allows fewer).

The batch is processed together (one argmax for the greedy rows, one pass per filter for the
sampled ones); only the draws run per row, each from its own generator, so a row's token does
not depend on the rows beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlcx.runtime.sample.logits_buffer import LogitsBuffer
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.penalties import apply_penalties, penalized
from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.sample.truncation import Distribution, distributions
from mlcx.runtime.structured.token_masks import TokenMasks

_DRAW_BLOCK = 256


@dataclass(frozen=True)
class SampleResult:
    token_id: int
    logprob: float | None  # log-softmax of the processed logits; None unless params.logprobs
    top_logprobs: list[tuple[int, float]] | None  # descending; None unless top_logprobs > 0


def _checked(logits: np.ndarray, states: Sequence[SamplingState]) -> np.ndarray:
    logits = np.asarray(logits)
    if logits.ndim != 2 or logits.shape[0] != len(states):
        raise ValueError(
            f"logits must have shape (len(states)={len(states)}, vocab), got {logits.shape}"
        )
    if not (np.issubdtype(logits.dtype, np.floating) or logits.dtype.name == "bfloat16"):
        raise ValueError(f"logits must be floating point, got dtype {logits.dtype}")
    for state in states:
        state.check_vocab(logits.shape[1])
    return logits


def _check_finite(maxima: np.ndarray) -> None:
    """`maxima`: each row's max, or its argmax value (both NaN when the row holds a NaN)."""
    bad = np.flatnonzero(~np.isfinite(maxima))
    if bad.size:
        raise ValueError(
            f"logits row {int(bad[0])} must be free of NaN and +inf and keep at least one "
            "finite value after logit_bias and penalties"
        )


def _edits(states: Sequence[SamplingState], masks: TokenMasks | None) -> bool:
    return masks is not None or any(penalized(s.params) for s in states)


def _processed(
    logits: np.ndarray,
    states: Sequence[SamplingState],
    masks: TokenMasks | None,
    scratch: LogitsBuffer | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(float32 processed logits, each row's max) of checked logits. Without a mask or a
    penalty to apply, float32 `logits` come back as they are: read them, do not write."""
    if logits.dtype == np.float32 and not _edits(states, masks):
        x = logits
    else:
        x = logits.astype(np.float32) if scratch is None else scratch.copy_of(logits)
    if masks is not None:
        masks.apply(x)
    for row, state in zip(x, states, strict=True):
        if penalized(state.params):
            apply_penalties(row, state)
    maxima = x.max(axis=1)  # max() propagates NaN: one pass finds NaN, +inf and empty rows
    _check_finite(maxima)
    return x, maxima


def processed_logits(
    logits: np.ndarray, states: Sequence[SamplingState], masks: TokenMasks | None = None
) -> np.ndarray:
    """Logits after the masks of the constrained rows, bias and penalties, as float32
    (b, vocab); `logits` is not modified."""
    x = _processed(_checked(logits, states), states, masks, None)[0]
    return x.copy() if x is logits else x


def _scaled(x: np.ndarray, maxima: np.ndarray, rows: list[int], params, into) -> np.ndarray:
    """(x[rows] - their max) / temperature as float32 in one pass from `x`, into `into`
    (x itself, or a scratch array shaped like it) when all rows are sampled."""
    if len(rows) == x.shape[0]:
        z = into
        np.subtract(x, maxima[:, None], out=z)
    else:
        z = x[rows]  # a copy
        z -= maxima[rows][:, None]
    scale = np.array([1.0 / p.temperature for p in params], np.float32)
    if (scale != 1.0).any():  # a pass saved at temperature 1: x * 1 is x
        z *= scale[:, None]
    return z


def _sampled_distributions(
    x: np.ndarray, maxima: np.ndarray, states: Sequence[SamplingState], into: np.ndarray
) -> list[tuple[int, Distribution]]:
    """(row, distribution) for the non-greedy rows; may overwrite `into`, where the scaled
    logits of a batch of sampled rows only go (`x` itself when `x` may be overwritten)."""
    rows = [i for i, s in enumerate(states) if not s.params.is_greedy]
    if not rows:
        return []
    params = [states[i].params for i in rows]
    z = _scaled(x, maxima, rows, params, into)
    return list(zip(rows, distributions(z, params), strict=True))


def _into(x: np.ndarray, logits: np.ndarray, scratch: LogitsBuffer | None) -> np.ndarray:
    """Where the scaled logits of all rows may go: `x` when it is a copy, never `logits`."""
    if x is not logits:
        return x
    return np.empty_like(x) if scratch is None else scratch.empty(x.shape)


def processed_probs(logits: np.ndarray, states: Sequence[SamplingState]) -> np.ndarray:
    """The distribution `sample` draws from, (b, vocab) float64; one-hot for greedy rows."""
    logits = _checked(logits, states)
    x, maxima = _processed(logits, states, None, None)
    probs = np.zeros(x.shape)
    probs[np.arange(len(states)), x.argmax(axis=1)] = 1.0
    for i, (ids, weights) in _sampled_distributions(x, maxima, states, _into(x, logits, None)):
        probs[i] = 0.0
        probs[i, slice(None) if ids is None else ids] = weights / weights.sum(dtype=np.float64)
    return probs


def _first_above(cum: np.ndarray, u: float, weights: np.ndarray) -> int:
    """First index whose cumulative weight exceeds u: never a zero weight."""
    j = int(np.searchsorted(cum, u, side="right"))
    if j == cum.size:  # u rounded up to the total: take the last positive weight
        j = int(np.flatnonzero(weights)[-1])
    return j


def _draw(ids: np.ndarray | None, weights: np.ndarray, rng: np.random.Generator) -> int:
    """Inverse-CDF draw in two levels, blocks then one block, to avoid a vocab-long cumsum."""
    starts = np.arange(0, weights.size, _DRAW_BLOCK)
    block_mass = np.add.reduceat(weights, starts, dtype=np.float64)
    block_cum = np.cumsum(block_mass)
    u = rng.random() * block_cum[-1]
    b = _first_above(block_cum, u, block_mass)
    block = weights[starts[b] : starts[b] + _DRAW_BLOCK]
    before = block_cum[b - 1] if b else 0.0
    j = int(starts[b]) + _first_above(before + np.cumsum(block, dtype=np.float64), u, block)
    return j if ids is None else int(ids[j])


def draw(weights: np.ndarray, rng: np.random.Generator) -> int:
    """One token id from non-negative relative `weights` over the whole vocabulary, drawn
    the way `sample` draws (one uniform draw)."""
    return _draw(None, weights, rng)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=1)
    shifted = x - top[:, None]
    return top + np.log(np.exp(shifted, out=shifted).sum(axis=1, dtype=np.float64))


def _result(token: int, row: np.ndarray | None, lse: float, params: SamplingParams) -> SampleResult:
    """`row`: the processed logits when logprobs were asked for; log-softmax = row - lse."""
    if row is None:
        return SampleResult(token, None, None)
    top = None
    if params.top_logprobs:
        k = min(params.top_logprobs, row.size)
        ids = np.argpartition(row, row.size - k)[row.size - k :]
        ids = ids[np.lexsort((ids, -row[ids]))]  # descending, ties by lower id
        top = [(int(i), float(row[i]) - lse) for i in ids if row[i] > -np.inf]
    return SampleResult(token, float(row[token]) - lse, top)


def _plain_greedy(logits: np.ndarray, states: Sequence[SamplingState]) -> np.ndarray | None:
    """The tokens when every row is an argmax of its raw logits (no mask, penalty or
    logprobs), read without a copy; None otherwise."""
    if logits.dtype != np.float32:
        return None
    for s in states:
        p = s.params
        if not p.is_greedy or p.logprobs or penalized(p) or s.matcher is not None:
            return None
    tokens = logits.argmax(axis=1)  # ties go to the lowest id; a NaN wins, caught below
    _check_finite(logits[np.arange(len(states)), tokens])
    return tokens


def sample(
    logits: np.ndarray,
    states: Sequence[SamplingState],
    masks: TokenMasks | None = None,
    scratch: LogitsBuffer | None = None,
) -> list[SampleResult]:
    """Pick one token per row of `logits` (b, vocab). The caller appends it to the state.
    `masks` holds the allowed tokens of the constrained rows (their states have a matcher);
    `scratch`, kept by the caller from step to step, holds the processed logits."""
    if len(states) == 0:
        return []
    logits = _checked(logits, states)
    tokens = _plain_greedy(logits, states) if masks is None else None
    if tokens is not None:
        return [SampleResult(int(t), None, None) for t in tokens]
    x, maxima = _processed(logits, states, masks, scratch)
    greedy = any(s.params.is_greedy for s in states)
    tokens = x.argmax(axis=1) if greedy else np.zeros(len(states), np.int64)
    want = [i for i, s in enumerate(states) if s.params.logprobs]
    rows = x[want]  # a copy: sampling below may overwrite x
    logs = dict(zip(want, zip(rows, _logsumexp(rows).tolist(), strict=True), strict=True))
    into = _into(x, logits, scratch)
    for i, (ids, weights) in _sampled_distributions(x, maxima, states, into):
        tokens[i] = _draw(ids, weights, states[i].rng)
    results = []
    for i, state in enumerate(states):
        row, lse = logs.get(i, (None, 0.0))
        results.append(_result(int(tokens[i]), row, lse, state.params))
    return results
