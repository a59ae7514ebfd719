"""What the engine asks of a model runner, whichever device it drives.

A runner owns all device memory: the weights and the KV pages (`num_blocks` blocks, as the
engine's KV cache manager hands them out). Each step it copies the pages the manager asks it
to copy, runs the compiled step function and returns the logits of the batch's logit rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.runtime.backends.forward_batch import ForwardBatch


class Runner(Protocol):
    num_blocks: int  # KV blocks the runner holds pages for

    def forward(self, batch: ForwardBatch) -> np.ndarray:
        """Logits [rows, vocab] (float32) for the batch's logit rows, after its page copies."""
        ...


# (artifact, KV blocks, device override or None) -> a ready runner
RunnerFactory = Callable[[Artifact, int, str | None], Runner]
