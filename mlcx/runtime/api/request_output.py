"""What `LLM.generate`, `LLM.chat` and `LLM.embed` return, in vLLM's shape: one RequestOutput
per prompt, its `outputs` the prompt's n choices (mlcx's `Completion`: vLLM's CompletionOutput
fields `index`, `text`, `token_ids`, `finish_reason`, `logprobs`, `cumulative_logprob`, and a
chat reply split into `reasoning_content`, `content` and `tool_calls`)."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.runtime.core.outputs import Completion

CompletionOutput = Completion  # vLLM's name for one choice


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None  # the prompt's text (None for a prompt given as token ids)
    prompt_token_ids: list[int]
    outputs: list[Completion]
    finished: bool = True


@dataclass(frozen=True)
class EmbeddingOutput:
    embedding: list[float]


@dataclass(frozen=True)
class EmbeddingRequestOutput:
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: EmbeddingOutput
