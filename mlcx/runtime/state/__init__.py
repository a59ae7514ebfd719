"""A hybrid model's per-sequence state beside the paged KV cache: which state slot each
running sequence holds, and the checkpoints (saved states keyed by the KV prefix hash) that
let a sequence resume from a cached prefix. Slot ids only, no tensors: the runner owns the
state tensors, as it owns the KV pages."""

from mlcx.runtime.state.cache import (
    NO_STATES,
    NO_STEP,
    Resume,
    SequenceStates,
    StateCache,
    StateStats,
    StateStep,
)
from mlcx.runtime.state.copies import copy_waves
from mlcx.runtime.state.slot_pool import OutOfSlots, SlotPool

__all__ = [
    "NO_STATES",
    "NO_STEP",
    "OutOfSlots",
    "Resume",
    "SequenceStates",
    "SlotPool",
    "StateCache",
    "StateStats",
    "StateStep",
    "copy_waves",
]
