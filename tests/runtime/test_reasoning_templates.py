"""Real reasoning models' chat templates (tests/fixtures/chat_templates) render as
transformers renders them, and past reasoning reaches them as they expect: an assistant
message's `reasoning_content` (what mlcx returns) is also given as `thinking` (what gpt-oss's
template reads), and each template keeps or drops it as it decides."""

from __future__ import annotations

import copy
import json

import pytest
import tokenizers
from tokenizers import models

from mlcx.runtime.text.chat_template import ChatTemplate
from tests.support.reasoning_models import TEMPLATES

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["location"],
        },
    },
}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"location": "Tokyo"}'},
}
THOUGHT = "I need the weather tool."
TOOL_TURN = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Tokyo?"},
    {"role": "assistant", "content": "", "reasoning_content": THOUGHT, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 20}'},
]
PAST_TURN = [
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!", "reasoning_content": "The user greets me."},
    {"role": "user", "content": "Weather in Tokyo?"},
]


@pytest.fixture(scope="module")
def reference():
    from transformers import PreTrainedTokenizerFast

    backend = tokenizers.Tokenizer(models.BPE({"<s>": 0, "</s>": 1, "a": 2}, []))
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>")


def as_transformers_takes_them(messages: list[dict]) -> list[dict]:
    """Arguments as dicts and reasoning as `thinking` too, as Hugging Face's docs give them."""
    out = copy.deepcopy(messages)
    for message in out:
        if "reasoning_content" in message:
            message["thinking"] = message["reasoning_content"]
        for call in message.get("tool_calls", []):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return out


def rendered(reference, template: str, messages: list[dict]) -> tuple[str, str]:
    source = (TEMPLATES / template).read_text()
    ours = ChatTemplate(source).render(messages, tools=[WEATHER])
    want = reference.apply_chat_template(
        as_transformers_takes_them(messages),
        chat_template=source,
        tools=[WEATHER],
        tokenize=False,
        add_generation_prompt=True,
    )
    return ours, want


@pytest.mark.parametrize("template", ["gpt_oss.jinja", "qwen3.jinja"])
def test_a_tool_turn_keeps_its_reasoning(reference, template):
    ours, want = rendered(reference, template, TOOL_TURN)
    assert ours == want
    assert THOUGHT in ours  # the turn that called a tool keeps its reasoning in both


def test_gpt_oss_renders_harmony(reference):
    ours, _ = rendered(reference, "gpt_oss.jinja", TOOL_TURN)
    assert ours.startswith("<|start|>system<|message|>")
    assert f"<|start|>assistant<|channel|>analysis<|message|>{THOUGHT}<|end|>" in ours
    assert (
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
        '{"location": "Tokyo"}<|call|>'
    ) in ours
    assert 'unit?: "c" | "f"' in ours  # the tool as TypeScript, in the developer message
    assert ours.endswith("<|start|>assistant")


@pytest.mark.parametrize("template", ["gpt_oss.jinja", "qwen3.jinja"])
def test_a_past_turns_reasoning_is_dropped(reference, template):
    ours, want = rendered(reference, template, PAST_TURN)
    assert ours == want
    assert "The user greets me." not in ours and "Hello!" in ours
