"""What the engine asks of a model runner, whichever device it drives.

A runner owns all device memory: the weights, the KV pages (`num_blocks` blocks, as the
engine's KV cache manager hands them out) and a hybrid model's state tensors (`num_state_slots`
slots, as its state cache hands them out). Each step it copies the pages and states the
managers ask it to copy, runs the compiled step function and returns the logits of the batch's
logit rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.runtime.backends.forward_batch import ForwardBatch


@dataclass(frozen=True)
class RunnerMemory:
    """Device memory a runner holds, in bytes (what an operator watches for growth)."""

    weights: int
    kv_pages: int
    # step buffers the runner pools itself (wgpu); None where the VM's allocator owns them
    step_pool: int | None = None
    states: int = 0  # a hybrid model's state tensors (every slot)


class Runner(Protocol):
    num_blocks: int  # KV blocks the runner holds pages for

    def memory(self) -> RunnerMemory: ...

    def forward(self, batch: ForwardBatch) -> np.ndarray:
        """Logits [rows, vocab] (float32) for the batch's logit rows, after its page copies."""
        ...


# (artifact, KV blocks, device override or None, state slots) -> a ready runner
RunnerFactory = Callable[[Artifact, int, str | None, int], Runner]


def check_state_slots(artifact: Artifact, num_state_slots: int) -> int:
    """The state slots a runner allocates: `num_state_slots` for a model with state layers,
    which needs at least one; none for a model without."""
    if not artifact.config.state_tensors:
        return 0
    if num_state_slots < 1:
        raise ValueError(
            f"{artifact.config.model_name} keeps a state per sequence (a hybrid model): its "
            "runner needs num_state_slots, at least one per running sequence"
        )
    return num_state_slots
