"""Verification of a batch's drafts against the target's logits, with each choice's own
sampling state: the sampler's processing (mask-free: constrained choices are not drafted),
then rejection sampling per choice."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mlcx.runtime.sample.sampler import processed_probs
from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.speculative.rejection import verify


def target_probs(
    logits: np.ndarray,
    starts: Sequence[int],
    states: Sequence[SamplingState],
    drafts: Sequence[Sequence[int]],
) -> list[np.ndarray]:
    """(k + 1, vocab) probabilities per choice, as `sample` would draw from them: the row of
    draft position j is processed with drafts[:j] appended to the output, so penalties see
    the tokens it follows. Vectorized over the choices, position by position."""
    probs = [np.empty((len(d) + 1, logits.shape[1])) for d in drafts]
    appended = [0] * len(drafts)
    try:
        for j in range(max(len(d) for d in drafts) + 1):
            level = [i for i, d in enumerate(drafts) if len(d) >= j]
            rows = processed_probs(
                logits[[starts[i] + j for i in level]], [states[i] for i in level]
            )
            for row, i in zip(rows, level, strict=True):
                probs[i][j] = row
                if j < len(drafts[i]):
                    states[i].append(drafts[i][j])
                    appended[i] += 1
    finally:
        for state, count in zip(states, appended, strict=True):
            state.drop_last(count)
    return probs


def verify_batch(
    logits: np.ndarray,
    starts: Sequence[int],
    states: Sequence[SamplingState],
    drafts: Sequence[Sequence[int]],
    proposals: Sequence[np.ndarray | None],
) -> list[list[int]]:
    """Per choice: its kept draft tokens and one more (see rejection.verify)."""
    probs = target_probs(logits, starts, states, drafts)
    return [
        verify(p, d, q, s.rng, s.params.is_greedy)
        for p, d, q, s in zip(probs, drafts, proposals, states, strict=True)
    ]
