"""From a validated request body to what the engine runs: prompts (or chat messages, which
the engine renders and encodes off the event loop) and `SamplingParams`.

Every user mistake found here becomes a 400 naming the field (`param`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mlcx.errors import InvalidFieldError
from mlcx.runtime.openai_api.errors import bad_request
from mlcx.runtime.openai_api.image_parts import has_images, message_content
from mlcx.runtime.openai_api.response_format import (
    extension_constraints,
    only_one,
    response_format_constraint,
)
from mlcx.runtime.openai_api.schemas import (
    ChatCompletionRequest,
    ChatMessage,
    CompletionRequest,
    SamplingFields,
)
from mlcx.runtime.openai_api.tools import ToolPlan, plan_tools
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.reasoning import check_format

Prompt = str | list[int]
Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class GenerationPlan:
    params: SamplingParams
    stream: bool
    include_usage: bool  # stream: a last chunk with usage (non-stream responses always have it)
    prompts: list[Prompt] = field(default_factory=list)  # completions: one request each
    messages: Messages | None = None  # chat: one conversation
    tool_plan: ToolPlan | None = None  # chat: the tools it may call
    reasoning_format: str = "none"  # chat: how replies are split (a reasoning.CHOICES name)

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The tools for the chat template."""
        return None if self.tool_plan is None else self.tool_plan.tools

    @property
    def has_images(self) -> bool:
        return any(has_images(m["content"]) for m in self.messages or ())

    @property
    def prompt_field(self) -> str:
        """The request field that holds the prompt, which errors about the prompt name."""
        return "prompt" if self.messages is None else "messages"


def plan_completion(body: CompletionRequest, defaults: Mapping[str, Any]) -> GenerationPlan:
    if body.echo:
        raise bad_request("echo is not supported", param="echo")
    logprobs = {} if body.logprobs is None else {"logprobs": True, "top_logprobs": body.logprobs}
    logprobs["constraint"] = only_one(extension_constraints(body))
    try:
        params = sampling_params(body, defaults, body.max_tokens, logprobs)
    except InvalidFieldError as err:  # completions call top_logprobs "logprobs"
        if err.param != "top_logprobs":
            raise
        raise bad_request(str(err).removeprefix("top_"), "logprobs") from None
    return _plan(body, params, prompts=_completion_prompts(body.prompt))


def plan_chat(
    body: ChatCompletionRequest, defaults: Mapping[str, Any], reasoning_format: str = "auto"
) -> GenerationPlan:
    """`reasoning_format`: the server's, which the request's own overrides."""
    messages = [_message(i, m) for i, m in enumerate(body.messages)]
    try:
        reasoning = check_format(body.reasoning_format or reasoning_format)
    except InvalidFieldError as err:
        raise bad_request(str(err), err.param) from None
    tool_plan = plan_tools(body)
    constraints = [response_format_constraint(body.response_format)]
    constraints += extension_constraints(body)
    constraints.append(None if tool_plan is None else tool_plan.constraint)
    extra = {
        "logprobs": body.logprobs,
        "top_logprobs": body.top_logprobs or 0,
        "constraint": only_one(constraints),
    }
    max_tokens = body.max_completion_tokens
    if max_tokens is None:
        max_tokens = body.max_tokens
    params = sampling_params(body, defaults, max_tokens, extra)
    plan = _plan(body, params, messages=messages, tool_plan=tool_plan)
    return replace(plan, reasoning_format=reasoning)


def sampling_params(
    body: SamplingFields,
    defaults: Mapping[str, Any],
    max_tokens: int | None,
    extra: dict[str, Any],
) -> SamplingParams:
    """The request's sampling fields over the model's defaults (its generation config);
    `extra`: the endpoint's own (logprobs, top_logprobs, constraint)."""
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
            **extra,
        )
    except InvalidFieldError as err:
        raise bad_request(str(err), param=err.param) from None


def _plan(
    body: SamplingFields,
    params: SamplingParams,
    prompts: list[Prompt] | None = None,
    messages: Messages | None = None,
    tool_plan: ToolPlan | None = None,
) -> GenerationPlan:
    options = body.stream_options
    if options is not None and not body.stream:
        raise bad_request("stream_options is only allowed with stream=true", "stream_options")
    include_usage = bool(options and options.include_usage)
    return GenerationPlan(params, body.stream, include_usage, prompts or [], messages, tool_plan)


def _completion_prompts(prompt: str | list) -> list[Prompt]:
    if isinstance(prompt, str):
        return [prompt]
    if not prompt:
        raise bad_request("prompt is empty; give a string or a list of prompts", "prompt")
    if all(isinstance(p, int) for p in prompt):
        return [list(prompt)]
    return list(prompt)


def _message(index: int, message: ChatMessage) -> dict[str, Any]:
    content = message.content
    if content is None and not message.tool_calls:
        raise bad_request(f"messages[{index}].content is missing", f"messages.{index}.content")
    if isinstance(content, list):
        content = message_content(index, content)
    role = "system" if message.role == "developer" else message.role
    out: dict[str, Any] = {"role": role, "content": content}
    if message.tool_calls:
        out["tool_calls"] = [call.model_dump() for call in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.reasoning_content is not None:
        out["reasoning_content"] = message.reasoning_content
    return out


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
