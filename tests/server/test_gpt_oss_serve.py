"""The tiny gpt-oss itself behind `mlcx serve`'s app, through the official client: compiled
from its MXFP4 folder, speaking through the folder's own tokenizer, harmony chat template and
generation config (a reply ends at `<|return|>` or `<|call|>`).

tests/server/test_reasoning.py holds the harmony parser to the OpenAI contract on a stand-in
model; here the real gpt-oss artifact runs every step. Its sampled tokens are scripted
(tests/support/scripted_sampler.py): a random model writes noise, not harmony.
"""

from __future__ import annotations

import json

import pytest

from mlcx.runtime.core.config import EngineConfig
from tests.server.conftest import serving
from tests.server.test_reasoning import (
    ARGUMENTS,
    HARMONY_ANSWER,
    HARMONY_CALL,
    MESSAGES,
    TOOLS,
    ask,
    joined,
    streamed,
)
from tests.support.scripted_sampler import ScriptedSampler


@pytest.fixture(scope="module")
def served(gpt_oss):
    with serving(gpt_oss.artifact("mxfp4"), EngineConfig(max_batch=2)) as served:
        served.sampler = ScriptedSampler(served.engine)
        yield served


def _prompt_tokens(folder, **kwargs) -> int:
    """The prompt's length as transformers renders the folder's chat template."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    rendered = tokenizer.apply_chat_template(
        MESSAGES, add_generation_prompt=True, return_dict=True, **kwargs
    )
    return len(rendered["input_ids"])


def test_the_prompt_is_the_models_own_template(served, gpt_oss):
    folder = gpt_oss.source("mxfp4")
    plain = ask(served, HARMONY_ANSWER, "<|return|>")
    assert plain.usage.prompt_tokens == _prompt_tokens(folder)
    with_tools = ask(served, HARMONY_ANSWER, "<|return|>", tools=TOOLS)
    assert with_tools.usage.prompt_tokens == _prompt_tokens(folder, tools=TOOLS)
    assert with_tools.usage.prompt_tokens > plain.usage.prompt_tokens + 20  # the tool listing


def test_reasoning_and_content_split(served):
    [choice] = ask(served, HARMONY_ANSWER, "<|return|>").choices
    assert choice.message.reasoning_content == "The user wants the weather."
    assert choice.message.content == "It is sunny in Tokyo."
    assert choice.finish_reason == "stop"
    choices, final = streamed(served, HARMONY_ANSWER, "<|return|>")
    assert joined(choices, "reasoning_content") == "The user wants the weather."
    assert joined(choices, "content") == "It is sunny in Tokyo."
    assert len(choices) > 3 and choices[-1].finish_reason == "stop"
    assert final.choices[0].message.content == "It is sunny in Tokyo."


def test_a_tool_call_in_tool_calls(served):
    """`<|call|>` ends the reply (the folder's generation config), the commentary channel's
    `to=functions.get_weather` becomes the call."""
    [choice] = ask(served, HARMONY_CALL, "<|call|>", tools=TOOLS).choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert choice.message.reasoning_content == "Need the weather tool."
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == ARGUMENTS
    choices, final = streamed(served, HARMONY_CALL, "<|call|>", tools=TOOLS)
    [whole] = final.choices
    assert whole.finish_reason == "tool_calls"
    assert json.loads(whole.message.tool_calls[0].function.arguments) == ARGUMENTS
