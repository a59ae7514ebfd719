"""Request bodies of the OpenAI API, as far as mlcx serves them.

Strict types (a string is not a number) and unknown fields ignored, as OpenAI-compatible
servers do. Ranges are checked once, by `SamplingParams`, so the messages name the field the
same way everywhere.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "developer", "user", "assistant", "tool"]


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class StreamOptions(_Body):
    include_usage: bool = False


class LoraField(_Body):
    name: str
    scale: float = 1.0


class SamplingFields(_Body):
    """Fields shared by /v1/completions and /v1/chat/completions."""

    model: str
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float | None = None
    n: int = 1
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    logit_bias: dict[str, float] | None = None
    ignore_eos: bool = False
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    # mlcx extensions (extra body fields): the whole output matches this regex / Lark grammar
    regex: str | None = None
    grammar: str | None = None
    # the LoRA adapter to run with (a name, or a name and a scale); `model="base:name"` too
    lora: str | LoraField | None = None


class CompletionRequest(SamplingFields):
    prompt: str | list[str] | list[int] | list[list[int]]
    max_tokens: int | None = 16  # OpenAI's default for completions
    logprobs: int | None = None  # the number of top logprobs per token (0: just the token's)
    echo: bool = False


class TextPart(_Body):
    type: Literal["text"]
    text: str


class ImageURL(_Body):
    url: str  # a data:image/...;base64 URL, or http(s) where the operator allows it
    detail: str | None = None  # OpenAI's hint; every image is encoded at the model's size


class ImagePart(_Body):
    type: Literal["image_url"]
    image_url: ImageURL


class CalledFunction(_Body):
    name: str
    arguments: str  # JSON text, as OpenAI sends it


class MessageToolCall(_Body):
    id: str
    type: Literal["function"] = "function"
    function: CalledFunction


class ChatMessage(_Body):
    role: Role
    content: str | list[TextPart | ImagePart] | None = None
    name: str | None = None
    tool_calls: list[MessageToolCall] | None = None  # an assistant's calls
    tool_call_id: str | None = None  # a tool message: the call it answers
    reasoning_content: str | None = None  # an assistant's reasoning, as replies carry it


class FunctionDefinition(_Body):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None  # a JSON schema; None: no arguments
    strict: bool | None = None


class Tool(_Body):
    type: Literal["function"]
    function: FunctionDefinition


class ChatCompletionRequest(SamplingFields):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    response_format: dict[str, Any] | None = None  # checked in response_format.py
    tools: list[Tool] | None = None
    # "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}: checked
    # in tools.py, which can say what is wrong better than a union's errors
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    # llama-server's: how the reply is split (mlcx.runtime.text.reasoning.CHOICES); default:
    # the server's --reasoning-format
    reasoning_format: str | None = None
