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


@pytest.mark.parametrize("template", ["gpt_oss.jinja", "qwen3.jinja", "qwen3_5.jinja"])
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


@pytest.mark.parametrize("template", ["gpt_oss.jinja", "qwen3.jinja", "qwen3_5.jinja"])
def test_a_past_turns_reasoning_is_dropped(reference, template):
    ours, want = rendered(reference, template, PAST_TURN)
    assert ours == want
    assert "The user greets me." not in ours and "Hello!" in ours


def test_qwen3_5_opens_the_reasoning_in_its_generation_prompt(reference):
    """Qwen3.5's template ends the prompt inside `<think>`: its replies are read as think
    replies that begin in the reasoning (mlcx.runtime.text.reasoning.think)."""
    from mlcx.runtime.text.reasoning import FORMATS, Content, Reasoning
    from mlcx.runtime.text.reasoning.formats import detect_format

    source = (TEMPLATES / "qwen3_5.jinja").read_text()
    ours, _ = rendered(reference, "qwen3_5.jinja", PAST_TURN)
    assert ours.endswith("<|im_start|>assistant\n<think>\n")
    assert detect_format(source, lambda token: True) is FORMATS["think"]
    parser = FORMATS["think"].parser(ours[-40:])
    events = parser.feed("The user asks.\n</think>\n\nSunny.") + parser.finish()
    assert events == [Reasoning("The user asks."), Content("Sunny.")]


def test_lfm2_5_drops_past_reasoning_as_transformers_renders_it(reference):
    past = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>The user greets me.</think>Hello!"},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "<think>No tool.</think>Sunny."},
        {"role": "user", "content": "Thanks"},
    ]
    source = (TEMPLATES / "lfm2_5.jinja").read_text()
    ours = ChatTemplate(source, bos_token="<s>").render(past)
    want = reference.apply_chat_template(
        past, chat_template=source, tokenize=False, add_generation_prompt=True
    )
    assert ours == want and ours.endswith("<|im_start|>assistant\n")
    # only the last assistant turn keeps its reasoning
    assert "greets" not in ours and "<think>No tool.</think>Sunny." in ours
