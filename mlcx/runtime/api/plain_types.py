"""The OpenAI response objects as plain dataclasses, for a Python without the `openai` package:
the same names and fields as `openai.types` (those an mlcx response fills, and the optional
ones beside them), built from the same JSON bodies the server sends (response_types.py)."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CompletionUsage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    completion_tokens_details: Any = None
    prompt_tokens_details: Any = None


@dataclass
class TopLogprob:
    token: str
    logprob: float
    bytes: list[int] | None = None


@dataclass
class ChatCompletionTokenLogprob:
    token: str
    logprob: float
    bytes: list[int] | None = None
    top_logprobs: list[TopLogprob] = field(default_factory=list)


@dataclass
class ChoiceLogprobs:
    content: list[ChatCompletionTokenLogprob] | None = None
    refusal: list[ChatCompletionTokenLogprob] | None = None


@dataclass
class Function:
    name: str
    arguments: str


@dataclass
class ChatCompletionMessageToolCall:
    id: str
    function: Function
    type: str = "function"


@dataclass
class ChatCompletionMessage:
    role: str = "assistant"
    content: str | None = None
    reasoning_content: str | None = None  # mlcx's (vLLM's, llama-server's) extra field
    tool_calls: list[ChatCompletionMessageToolCall] | None = None
    refusal: str | None = None
    annotations: Any = None
    audio: Any = None
    function_call: Any = None


@dataclass
class Choice:
    index: int
    message: ChatCompletionMessage
    finish_reason: str | None = None
    logprobs: ChoiceLogprobs | None = None


@dataclass
class ChatCompletion:
    id: str
    choices: list[Choice]
    created: int
    model: str
    object: str = "chat.completion"
    usage: CompletionUsage | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None


@dataclass
class ChoiceDeltaToolCallFunction:
    name: str | None = None
    arguments: str | None = None


@dataclass
class ChoiceDeltaToolCall:
    index: int
    id: str | None = None
    function: ChoiceDeltaToolCallFunction | None = None
    type: str | None = None


@dataclass
class ChoiceDelta:
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ChoiceDeltaToolCall] | None = None
    refusal: str | None = None
    function_call: Any = None


@dataclass
class ChunkChoice:
    index: int
    delta: ChoiceDelta
    finish_reason: str | None = None
    logprobs: ChoiceLogprobs | None = None


@dataclass
class ChatCompletionChunk:
    id: str
    choices: list[ChunkChoice]
    created: int
    model: str
    object: str = "chat.completion.chunk"
    usage: CompletionUsage | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None


@dataclass
class Logprobs:
    tokens: list[str] | None = None
    token_logprobs: list[float] | None = None
    top_logprobs: list[dict[str, float]] | None = None
    text_offset: list[int] | None = None


@dataclass
class CompletionChoice:
    index: int
    text: str
    finish_reason: str | None = None
    logprobs: Logprobs | None = None


@dataclass
class Completion:
    id: str
    choices: list[CompletionChoice]
    created: int
    model: str
    object: str = "text_completion"
    usage: CompletionUsage | None = None
    system_fingerprint: str | None = None


@dataclass
class Embedding:
    embedding: list[float] | str
    index: int
    object: str = "embedding"


@dataclass
class Usage:
    prompt_tokens: int
    total_tokens: int


@dataclass
class CreateEmbeddingResponse:
    data: list[Embedding]
    model: str
    usage: Usage
    object: str = "list"


@dataclass
class Model:
    id: str
    created: int
    owned_by: str
    object: str = "model"
    parent: str | None = None  # an adapter's base model (vLLM's field)


@dataclass
class ModelList:
    data: list[Model]
    object: str = "list"

    def __iter__(self):
        return iter(self.data)


def build(cls: type, data: dict[str, Any]) -> Any:
    """An instance of the dataclass `cls` from a response body (nested objects too); keys the
    dataclass does not name are left out."""
    hints = typing.get_type_hints(cls)
    given = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            given[f.name] = _value(hints[f.name], data[f.name])
    return cls(**given)


def _value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    for option in _options(hint):
        if dataclasses.is_dataclass(option) and isinstance(value, dict):
            return build(option, value)  # type: ignore[arg-type]
        if typing.get_origin(option) is list and isinstance(value, list):
            [item] = typing.get_args(option) or (Any,)
            return [_value(item, v) for v in value]
    return value


def _options(hint: Any) -> tuple:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)
