"""Where an engine step's time goes, with `streams` requests decoding together in process.

The engine enters its step hooks around each phase (mlcx/runtime/core/hooks.py); the hooks
here time them, so the steps are exactly those `mlcx serve` runs. `other` is the rest of
`Engine.step`: its own bookkeeping (the inbox, stats snapshots, the batch arrays).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.hooks import PHASES, StepHooks
from mlcx.runtime.sample.params import SamplingParams

PROMPT = "Write a short story about a lighthouse keeper."


@dataclass(frozen=True)
class StepBreakdown:
    streams: int
    steps: int
    tokens: int  # generated
    seconds: float  # in Engine.step, all steps
    phases: dict[str, float]  # seconds per phase, "other" included

    def lines(self) -> list[str]:
        out = [
            f"{self.streams} streams: {self.steps} steps, {self.tokens} tokens, "
            f"{self.seconds / self.steps * 1e3:.2f} ms per step, {self.tokens / self.seconds:.1f} "
            "tok/s in Engine.step",
            f"  {'phase':<12} {'ms/step':>9} {'share':>7}",
        ]
        for name, s in self.phases.items():
            out.append(f"  {name:<12} {s / self.steps * 1e3:>9.3f} {s / self.seconds:>7.1%}")
        return out


class PhaseTimer(StepHooks):
    """Adds each phase's wall time to `totals`."""

    def __init__(self, totals: dict[str, float]):
        self.totals = totals

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.totals[name] += time.perf_counter() - start


@contextmanager
def _timed(engine: Engine, totals: dict[str, float]) -> Iterator[None]:
    before, engine.hooks = engine.hooks, PhaseTimer(totals)
    try:
        yield
    finally:
        engine.hooks = before


def _prompts(engine: Engine, streams: int, prompt_tokens: int | None) -> list:
    """The text prompt for every stream, or distinct random token prompts of that length (the
    prefix cache shares nothing between them)."""
    if prompt_tokens is None:
        return [PROMPT] * streams
    rng = np.random.default_rng(prompt_tokens)
    high = engine.tokenizer.vocab_size
    return [rng.integers(high // 4, high // 2, prompt_tokens).tolist() for _ in range(streams)]


def profile_steps(
    engine: Engine, streams: int, max_tokens: int, prompt_tokens: int | None = None
) -> StepBreakdown:
    """Adds `streams` greedy requests of `max_tokens` (EOS ignored) and steps until all end.

    With `prompt_tokens`, each request's prompt is that many random tokens and only the steps
    after every stream has its first token count: decoding at that context, prefill left out.
    """
    if streams < 1 or max_tokens < 1 or (prompt_tokens is not None and prompt_tokens < 1):
        raise ValueError("streams, max_tokens and prompt_tokens must be >= 1")
    params = SamplingParams.greedy(max_tokens=max_tokens, ignore_eos=True)
    for i, prompt in enumerate(_prompts(engine, streams, prompt_tokens)):
        engine.add_request(f"profile-{i}", prompt, params)
    totals: dict[str, float] = defaultdict(float)
    steps = tokens = 0
    seconds = 0.0
    started: set[str] = set()
    with _timed(engine, totals):
        while engine.has_work():
            counted = prompt_tokens is None or len(started) == streams
            before = None if counted else dict(totals)
            start = time.perf_counter()
            deltas = engine.step()
            elapsed = time.perf_counter() - start
            started |= {d.request_id for d in deltas if d.token_ids}
            if not counted:  # a step with prefill in it: its phase times are taken back
                totals.clear()
                totals.update(before)
                continue
            seconds += elapsed
            steps += 1
            tokens += sum(len(d.token_ids) for d in deltas)
    phases = {name: totals[name] for name in PHASES}
    phases["other"] = seconds - sum(phases.values())
    return StepBreakdown(streams, steps, tokens, seconds, phases)
