"""Inputs for sampler tests: seeded random logits and a state over a token history."""

from __future__ import annotations

import numpy as np

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import SamplingState

VOCAB = 1000


def random_logits(rows: int, vocab: int = VOCAB, scale: float = 3.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, vocab)) * scale).astype(np.float32)


def sampling_state(params: SamplingParams, prompt=(), output=()) -> SamplingState:
    return SamplingState(params, prompt, output_ids=output)
