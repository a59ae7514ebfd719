"""Observing the phases of `Engine.step` without touching its code: the engine enters
`hooks.phase(NAME)` around each phase. The default hooks do nothing;
mlcx/bench/measure/step_profile.py times each phase with its own."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

SCHEDULE = "schedule"  # the scheduler: planning the step, and taking its sampled tokens
PAGE_TABLES = "page tables"  # the KV cache manager building the kernels' page-table arrays
FORWARD = "forward"  # the runner: page copies and the model's forward step
SAMPLE = "sample"  # sampling (and verifying drafts) from the logits
DETOKENIZE = "detokenize"  # the output processor: text, stop strings, deltas
PHASES = (SCHEDULE, PAGE_TABLES, FORWARD, SAMPLE, DETOKENIZE)

_NOTHING = nullcontext()


class StepHooks:
    """No-op hooks; subclass and override `phase` to observe a step."""

    def phase(self, name: str) -> AbstractContextManager[object]:
        """Entered around the phase `name` (one of PHASES) of every step."""
        return _NOTHING


NO_HOOKS = StepHooks()
