"""What a row's own parameters do to its logits before temperature: logit_bias, then the
repetition penalty (Hugging Face semantics: prompt and output tokens, positive logits divided,
negative multiplied), then presence/frequency penalties (OpenAI semantics: output tokens only).
"""

from __future__ import annotations

import numpy as np

from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampling_state import SamplingState


def penalized(p: SamplingParams) -> bool:
    """Whether `p` changes any logit (bias or a penalty)."""
    return (
        bool(p.logit_bias)
        or p.repetition_penalty != 1.0
        or bool(p.presence_penalty or p.frequency_penalty)
    )


def apply_penalties(row: np.ndarray, state: SamplingState) -> None:
    """Bias and penalize one float32 logits row in place."""
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
