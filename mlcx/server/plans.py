"""From a validated request body to what the engine runs: prompts (or chat messages, which
the engine renders and encodes off the event loop) and `SamplingParams`.

Every user mistake found here becomes a 400 naming the field (`param`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mlcx.errors import InvalidFieldError
from mlcx.runtime.sampling_params import SamplingParams
from mlcx.server.errors import APIError, bad_request
from mlcx.server.schemas import ChatCompletionRequest, CompletionRequest, SamplingFields

Prompt = str | list[int]
Messages = list[dict[str, str]]


@dataclass(frozen=True)
class GenerationPlan:
    params: SamplingParams
    stream: bool
    include_usage: bool  # stream: a last chunk with usage (non-stream responses always have it)
    prompts: list[Prompt] = field(default_factory=list)  # completions: one request each
    messages: Messages | None = None  # chat: one conversation

    @property
    def prompt_field(self) -> str:
        """The request field that holds the prompt, which errors about the prompt name."""
        return "prompt" if self.messages is None else "messages"


def plan_completion(body: CompletionRequest, defaults: Mapping[str, Any]) -> GenerationPlan:
    if body.echo:
        raise bad_request("echo is not supported", param="echo")
    logprobs = {} if body.logprobs is None else {"logprobs": True, "top_logprobs": body.logprobs}
    try:
        params = sampling_params(body, defaults, body.max_tokens, logprobs)
    except APIError as err:  # completions call top_logprobs "logprobs"
        if err.body["param"] != "top_logprobs":
            raise
        raise bad_request(err.body["message"].removeprefix("top_"), "logprobs") from None
    return _plan(body, params, prompts=_completion_prompts(body.prompt))


def plan_chat(body: ChatCompletionRequest, defaults: Mapping[str, Any]) -> GenerationPlan:
    messages = [_message(i, m) for i, m in enumerate(body.messages)]
    logprobs = {"logprobs": body.logprobs, "top_logprobs": body.top_logprobs or 0}
    max_tokens = body.max_completion_tokens
    if max_tokens is None:
        max_tokens = body.max_tokens
    params = sampling_params(body, defaults, max_tokens, logprobs)
    return _plan(body, params, messages=messages)


def sampling_params(
    body: SamplingFields,
    defaults: Mapping[str, Any],
    max_tokens: int | None,
    logprobs: dict[str, Any],
) -> SamplingParams:
    """The request's sampling fields over the model's defaults (its generation config)."""
    try:
        return SamplingParams.with_defaults(
            defaults,
            temperature=body.temperature,
            top_p=body.top_p,
            top_k=body.top_k,
            min_p=body.min_p,
            repetition_penalty=body.repetition_penalty,
            max_tokens=max_tokens,
            presence_penalty=body.presence_penalty,
            frequency_penalty=body.frequency_penalty,
            n=body.n,
            seed=body.seed,
            stop=() if body.stop is None else body.stop,
            stop_token_ids=tuple(body.stop_token_ids or ()),
            logit_bias=_logit_bias(body.logit_bias),
            ignore_eos=body.ignore_eos,
            **logprobs,
        )
    except InvalidFieldError as err:
        raise bad_request(str(err), param=err.param) from None


def _plan(
    body: SamplingFields,
    params: SamplingParams,
    prompts: list[Prompt] | None = None,
    messages: Messages | None = None,
) -> GenerationPlan:
    options = body.stream_options
    if options is not None and not body.stream:
        raise bad_request("stream_options is only allowed with stream=true", "stream_options")
    include_usage = bool(options and options.include_usage)
    return GenerationPlan(params, body.stream, include_usage, prompts or [], messages)


def _completion_prompts(prompt: str | list) -> list[Prompt]:
    if isinstance(prompt, str):
        return [prompt]
    if not prompt:
        raise bad_request("prompt is empty; give a string or a list of prompts", "prompt")
    if all(isinstance(p, int) for p in prompt):
        return [list(prompt)]
    return list(prompt)


def _message(index: int, message) -> dict[str, str]:
    content = message.content
    if content is None:
        raise bad_request(f"messages[{index}].content is missing", f"messages.{index}.content")
    if not isinstance(content, str):
        content = "".join(part.text for part in content)
    role = "system" if message.role == "developer" else message.role
    return {"role": role, "content": content}


def _logit_bias(bias: dict[str, float] | None) -> dict[int, float] | None:
    """OpenAI sends token ids as JSON object keys, i.e. strings."""
    if bias is None:
        return None
    out = {}
    for key, value in bias.items():
        if not key.isdigit():
            raise bad_request(
                f"logit_bias keys must be token ids (strings of digits), got {key!r}", "logit_bias"
            )
        out[int(key)] = value
    return out
