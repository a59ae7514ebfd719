"""Request bodies to plans: the request's sampling fields over the model's defaults, the same
merge as every other front door (`SamplingParams.with_defaults`)."""

from __future__ import annotations

import json

import pytest

from mlcx.errors import InvalidFieldError
from mlcx.runtime.openai_api.plans import plan_chat, plan_completion
from mlcx.runtime.openai_api.schemas import ChatCompletionRequest, CompletionRequest
from mlcx.runtime.sample.params import SamplingParams

DEFAULTS = {"temperature": 0.2, "top_p": 0.9}


def chat_body(**fields) -> ChatCompletionRequest:
    body = {"model": "m", "messages": [{"role": "developer", "content": "hi"}], **fields}
    return ChatCompletionRequest.model_validate_json(json.dumps(body))


def completion_body(**fields) -> CompletionRequest:
    body = {"model": "m", "prompt": "hello", **fields}
    return CompletionRequest.model_validate_json(json.dumps(body))


def test_chat_fields_over_the_model_defaults():
    plan = plan_chat(chat_body(top_p=0.5, max_completion_tokens=7), DEFAULTS)
    want = SamplingParams.with_defaults(DEFAULTS, top_p=0.5, max_tokens=7)
    assert plan.params == want and (want.temperature, want.top_p) == (0.2, 0.5)
    assert plan.messages == [{"role": "system", "content": "hi"}] and plan.prompts == []
    assert plan.prompt_field == "messages"


def test_completion_prompts_and_defaults():
    plan = plan_completion(completion_body(prompt=[[1, 2], [3]], temperature=0), DEFAULTS)
    assert plan.prompts == [[1, 2], [3]] and plan.messages is None
    assert plan.prompt_field == "prompt"
    assert plan.params == SamplingParams.with_defaults(DEFAULTS, temperature=0.0, max_tokens=16)
    unlimited = plan_chat(chat_body(), DEFAULTS).params
    assert unlimited.max_tokens is None and unlimited.top_p == 0.9


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (chat_body(top_p=0), "top_p"),
        (chat_body(stop_token_ids=[-1]), "stop_token_ids"),
        (completion_body(logprobs=50), "logprobs"),  # top_logprobs, as completions call it
    ],
)
def test_the_error_names_the_field(body, param):
    plan = plan_chat if isinstance(body, ChatCompletionRequest) else plan_completion
    with pytest.raises(InvalidFieldError) as caught:
        plan(body, DEFAULTS)
    assert caught.value.param == param
