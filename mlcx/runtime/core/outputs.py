"""What the engine reports: per-step deltas and finished completions."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlcx.runtime.sample.sampler import SampleResult
from mlcx.runtime.text.reasoning import ParsedReply, ToolCall


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
    """A finished choice, assembled from its deltas. `text` is the reply as the model wrote
    it; with a `reply` parser (a chat reply) it is also split into `reasoning_content`,
    `content` and `tool_calls`."""

    request_id: str
    index: int
    prompt_token_ids: list[int]
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[SampleResult] = field(default_factory=list)
    finish_reason: str | None = None
    reply: ParsedReply | None = field(default=None, repr=False)

    def add(self, delta: Delta) -> None:
        self.text += delta.text
        self.token_ids.extend(delta.token_ids)
        if delta.logprobs:
            self.logprobs.extend(delta.logprobs)
        self.finish_reason = delta.finish_reason or self.finish_reason
        if self.reply is not None:
            self.reply.feed(delta.text)
            if delta.finished:
                self.reply.finish()

    @property
    def cumulative_logprob(self) -> float | None:
        """The sum of the sampled tokens' logprobs (None unless the request asked for them)."""
        given = [r.logprob for r in self.logprobs if r.logprob is not None]
        return float(sum(given)) if given else None

    @property
    def reasoning_content(self) -> str | None:
        """The reasoning (None where there was none, or no parser)."""
        return (self.reply.reasoning or None) if self.reply is not None else None

    @property
    def content(self) -> str:
        """The reply without its reasoning and calls (all of `text` without a parser)."""
        return self.text if self.reply is None else self.reply.content

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Calls the reply's format marks as such (harmony's `functions.` messages)."""
        return [] if self.reply is None else self.reply.tool_calls
