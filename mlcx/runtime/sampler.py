"""Batched token sampling over numpy logits.

Per row, in this order: the constraint's token mask (disallowed tokens -> -inf) -> logit_bias
-> repetition penalty (Hugging Face semantics: prompt and output tokens, positive logits
divided, negative multiplied) -> presence/frequency penalties (OpenAI semantics: output tokens
only) -> greedy argmax when temperature == 0, otherwise temperature -> top_k -> top_p -> min_p
-> one draw from the sequence's own generator.

Reported logprobs are the log-softmax of the logits after mask, bias and penalties but before
temperature and truncation (vLLM's "processed logits" convention): they describe what the
model, the constraint and penalties made of the vocabulary, not the sampling distribution.
A constrained row's top_logprobs list only tokens the constraint allows (fewer than asked
when it allows fewer).

The truncation filters are thresholds on the sorted values, so tokens tied at a cutoff are all
kept (the top_k behaviour of Hugging Face, extended to top_p).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlcx.runtime.sampling_params import SamplingParams
from mlcx.runtime.sampling_state import SamplingState
from mlcx.runtime.token_masks import TokenMasks

# top_p looks for the nucleus among the m most likely tokens for each m here in turn (one
# O(vocab) partition each) and sorts the whole row only when their mass stays below top_p.
_NUCLEUS_CANDIDATES = (256, 4096)
_DRAW_BLOCK = 256

# (token ids, or None for the whole vocabulary; their positive relative weights)
_Distribution = tuple[np.ndarray | None, np.ndarray]


@dataclass(frozen=True)
class SampleResult:
    token_id: int
    logprob: float | None  # log-softmax of the processed logits; None unless params.logprobs
    top_logprobs: list[tuple[int, float]] | None  # descending; None unless top_logprobs > 0


def _apply_penalties(row: np.ndarray, state: SamplingState) -> None:
    p = state.params
    if p.logit_bias:
        ids = np.fromiter(p.logit_bias.keys(), dtype=np.int64)
        row[ids] += np.fromiter(p.logit_bias.values(), dtype=np.float64)
    if p.repetition_penalty != 1.0:
        seen = state.seen_ids()
        vals = row[seen]
        row[seen] = np.where(vals < 0, vals * p.repetition_penalty, vals / p.repetition_penalty)
    if p.presence_penalty or p.frequency_penalty:
        ids, counts = state.output_counts()
        row[ids] -= counts * p.frequency_penalty + p.presence_penalty


def processed_logits(
    logits: np.ndarray, states: Sequence[SamplingState], masks: TokenMasks | None = None
) -> np.ndarray:
    """Logits after the masks of the constrained rows, bias and penalties, as float32
    (b, vocab); `logits` is not modified."""
    logits = np.asarray(logits)
    if logits.ndim != 2 or logits.shape[0] != len(states):
        raise ValueError(
            f"logits must have shape (len(states)={len(states)}, vocab), got {logits.shape}"
        )
    if not (np.issubdtype(logits.dtype, np.floating) or logits.dtype.name == "bfloat16"):
        raise ValueError(f"logits must be floating point, got dtype {logits.dtype}")
    x = logits.astype(np.float32)
    if masks is not None:
        masks.apply(x)
    for row, state in zip(x, states, strict=True):
        state.check_vocab(x.shape[1])
        _apply_penalties(row, state)
    # max() propagates NaN, so one pass catches NaN, +inf and rows with nothing left to pick.
    bad = np.flatnonzero(~np.isfinite(x.max(axis=1)))
    if bad.size:
        raise ValueError(
            f"logits row {int(bad[0])} must be free of NaN and +inf and keep at least one "
            "finite value after logit_bias and penalties"
        )
    return x


def _top_k_candidates(z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    cutoff = np.partition(z, z.size - k)[z.size - k]
    ids = np.flatnonzero(z >= cutoff)  # ties with the k-th largest are kept, as in HF
    return ids, np.exp(z[ids], dtype=np.float64)


def _nucleus_cutoff(desc: np.ndarray, target: float) -> float | None:
    """Smallest kept weight if the sorted weights `desc` reach `target` mass, else None."""
    cum = np.cumsum(desc, dtype=np.float64)
    if cum[-1] < target:
        return None
    # A token is kept while the mass ranked above it is still below the target.
    return float(desc[np.searchsorted(cum[:-1], target, side="left")])


def _top_p_cutoff(weights: np.ndarray, top_p: float) -> float:
    """Smallest weight in the shortest most-likely prefix holding >= top_p of the mass."""
    target = top_p * float(weights.sum(dtype=np.float64))
    for m in _NUCLEUS_CANDIDATES:
        if m >= weights.size:
            break
        top = np.partition(weights, weights.size - m)[weights.size - m :]
        # Exact: when the m most likely tokens reach the target, the nucleus lies among them.
        cutoff = _nucleus_cutoff(np.sort(top)[::-1], target)
        if cutoff is not None:
            return cutoff
    desc = np.sort(weights)[::-1]
    cutoff = _nucleus_cutoff(desc, target)
    return float(desc[-1]) if cutoff is None else cutoff  # None only by rounding: keep all


def _row_distribution(z: np.ndarray, p: SamplingParams) -> _Distribution:
    """(token ids or None for all, weights proportional to their probabilities) for one row.

    `z` holds the logits over the temperature, shifted so their max is 0; it is overwritten.
    The weights are relative: the top token's weight is exp(0) = 1.
    """
    ids = None
    if 0 < p.top_k < z.size:
        ids, weights = _top_k_candidates(z, p.top_k)
    else:
        weights = np.exp(z, out=z)
    cutoff = p.min_p  # min_p times the top weight 1; top_p never removes the top token
    if p.top_p < 1.0:
        cutoff = max(cutoff, _top_p_cutoff(weights, p.top_p))
    if cutoff > 0.0:
        keep = np.flatnonzero(weights >= cutoff)
        ids, weights = (keep if ids is None else ids[keep]), weights[keep]
    return ids, weights


def _distributions(x: np.ndarray, params: Sequence[SamplingParams]) -> list[_Distribution]:
    """`_row_distribution` of every row of processed logits `x`, which is overwritten."""
    x -= x.max(axis=1, keepdims=True)
    x *= np.array([1.0 / p.temperature for p in params], np.float32)[:, None]
    return [_row_distribution(row, p) for row, p in zip(x, params, strict=True)]


def _sampled_distributions(
    x: np.ndarray, states: Sequence[SamplingState]
) -> list[tuple[int, _Distribution]]:
    """(row, distribution) for the non-greedy rows; overwrites those rows of `x`."""
    rows = [i for i, s in enumerate(states) if not s.params.is_greedy]
    if not rows:
        return []
    all_rows = len(rows) == len(states)
    sub = x if all_rows else x[rows]  # in place when possible: saves a (b, vocab) copy
    dists = _distributions(sub, [states[i].params for i in rows])
    return list(zip(rows, dists, strict=True))


def processed_probs(logits: np.ndarray, states: Sequence[SamplingState]) -> np.ndarray:
    """The distribution `sample` draws from, (b, vocab) float64; one-hot for greedy rows."""
    x = processed_logits(logits, states)
    probs = np.zeros(x.shape)
    probs[np.arange(len(states)), x.argmax(axis=1)] = 1.0
    for i, (ids, weights) in _sampled_distributions(x, states):
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


def sample(
    logits: np.ndarray, states: Sequence[SamplingState], masks: TokenMasks | None = None
) -> list[SampleResult]:
    """Pick one token per row of `logits` (b, vocab). The caller appends it to the state.
    `masks` holds the allowed tokens of the constrained rows (their states have a matcher)."""
    if len(states) == 0:
        return []
    x = processed_logits(logits, states, masks)
    tokens = x.argmax(axis=1)  # greedy; ties go to the lowest id
    want = [i for i, s in enumerate(states) if s.params.logprobs]
    rows = x[want]  # a copy: sampling below overwrites x
    logs = dict(zip(want, zip(rows, _logsumexp(rows).tolist(), strict=True), strict=True))
    for i, (ids, weights) in _sampled_distributions(x, states):
        tokens[i] = _draw(ids, weights, states[i].rng)
    results = []
    for i, state in enumerate(states):
        row, lse = logs.get(i, (None, 0.0))
        results.append(_result(int(tokens[i]), row, lse, state.params))
    return results
