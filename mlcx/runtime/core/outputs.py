"""What the engine reports: per-step deltas and finished completions."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlcx.runtime.sample.sampler import SampleResult


@dataclass(frozen=True)
class Delta:
    """New output of one sequence after a step (text may be empty while a character or a
    possible stop string is incomplete)."""

    request_id: str
    index: int
    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[SampleResult, ...] | None
    finish_reason: str | None  # "stop", "length", "abort" or None while running
    prompt_tokens: int
    completion_tokens: int

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class Completion:
    """A finished choice, assembled from its deltas."""

    request_id: str
    index: int
    prompt_token_ids: list[int]
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[SampleResult] = field(default_factory=list)
    finish_reason: str | None = None

    def add(self, delta: Delta) -> None:
        self.text += delta.text
        self.token_ids.extend(delta.token_ids)
        if delta.logprobs:
            self.logprobs.extend(delta.logprobs)
        self.finish_reason = delta.finish_reason or self.finish_reason
