"""Reasoning models through the official client: `reasoning_content` beside `content`, and
tool calls, as vLLM and llama-server return them; streamed (reassembled by the client's own
helper) and not.

The served artifacts speak gpt-oss's harmony format and Qwen3's `<think>` format: a tiny
model with a tokenizer holding each format's tokens and the model's real chat template
(tests/support/reasoning_models.py), whose sampled tokens are scripted replies
(tests/support/scripted_sampler.py), so the real engine and app run end to end.
"""

from __future__ import annotations

import json

import openai
import pytest

from mlcx.runtime.core.config import EngineConfig
from mlcx.server.config import ServerConfig
from tests.server.conftest import serving
from tests.support.reasoning_models import harmony_assets, think_assets, with_assets
from tests.support.scripted_sampler import ScriptedSampler
from tests.support.tiny_models import TinySpec

MESSAGES = [{"role": "user", "content": "Weather in Tokyo?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
            },
        },
    }
]
ARGUMENTS = {"location": "Tokyo"}
HARMONY_ANSWER = (
    "<|channel|>analysis<|message|>The user wants the weather.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>It is sunny in Tokyo."
)
HARMONY_CALL = (
    "<|channel|>analysis<|message|>Need the weather tool.<|end|><|start|>assistant"
    "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    + json.dumps(ARGUMENTS)
)
THINK_ANSWER = "<think>\nThe user wants the weather.\n</think>\n\nIt is sunny in Tokyo."
XML_TOOLS = [  # typed parameters: the XML's text is read back as each type
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string"},
                    "days": {"type": "integer"},
                    "metric": {"type": "boolean"},
                    "hours": {"type": "array", "items": {"type": "integer"}},
                },
            },
        },
    }
]
XML_ARGUMENTS = {"location": "Tokyo", "days": 3, "metric": True, "hours": [9, 12]}
# as Qwen3.5's template writes an assistant's call (its generation prompt opens the <think>)
XML_CALL = (
    "Need the weather tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
    "<parameter=location>\nTokyo\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
    "<parameter=metric>\nTrue\n</parameter>\n<parameter=hours>\n[9, 12]\n</parameter>\n"
    "</function>\n</tool_call>"
)
THINK_CALL = (
    "<think>\nNeed the weather tool.\n</think>\n\n<tool_call>\n"
    + json.dumps({"name": "get_weather", "arguments": ARGUMENTS})
    + "\n</tool_call>"
)


@pytest.fixture(scope="module")
def base(compiled):
    """Long enough for the tool listings of the real templates."""
    return compiled(TinySpec(context=2048))


def _serve(tmp_path_factory, base, assets, config=ServerConfig()):
    artifact = with_assets(base, assets, tmp_path_factory.mktemp("reasoning") / "artifact")
    with serving(artifact, EngineConfig(max_batch=2), config) as served:
        served.sampler = ScriptedSampler(served.engine)
        yield served


@pytest.fixture(scope="module")
def harmony(tmp_path_factory, base):
    yield from _serve(tmp_path_factory, base, harmony_assets())


@pytest.fixture(scope="module")
def think(tmp_path_factory, base):
    yield from _serve(tmp_path_factory, base, think_assets())


@pytest.fixture(scope="module")
def qwen3_5(tmp_path_factory, base):
    yield from _serve(tmp_path_factory, base, think_assets("qwen3_5.jinja"))


def ask(served, text: str, stop: str, **kwargs):
    served.sampler.say(served.engine.tokenizer, text, stop)
    client = served.client(max_retries=0)
    kwargs = {"model": served.model, "messages": MESSAGES, "max_tokens": 100, **kwargs}
    return client.chat.completions.create(**kwargs)


def streamed(served, text: str, stop: str, **kwargs) -> tuple[list, object]:
    """The chunks' deltas, and the completion the client's stream helper builds from them."""
    served.sampler.say(served.engine.tokenizer, text, stop)
    client = served.client(max_retries=0)
    kwargs = {"model": served.model, "messages": MESSAGES, "max_tokens": 100, **kwargs}
    with client.chat.completions.stream(**kwargs) as stream:
        chunks = [event.chunk for event in stream if event.type == "chunk"]
        final = stream.get_final_completion()
    return [c.choices[0] for c in chunks if c.choices], final


def joined(choices, field: str) -> str:
    return "".join(getattr(c.delta, field, None) or "" for c in choices)


def test_harmony_reply_splits_analysis_from_final(harmony):
    [choice] = ask(harmony, HARMONY_ANSWER, "<|return|>").choices
    assert choice.message.reasoning_content == "The user wants the weather."
    assert choice.message.content == "It is sunny in Tokyo."
    assert choice.finish_reason == "stop" and not choice.message.tool_calls


def test_harmony_reply_streams_reasoning_then_content(harmony):
    choices, final = streamed(harmony, HARMONY_ANSWER, "<|return|>")
    assert joined(choices, "reasoning_content") == "The user wants the weather."
    assert joined(choices, "content") == "It is sunny in Tokyo."
    kinds = [
        "reasoning" if getattr(c.delta, "reasoning_content", None) else "content"
        for c in choices
        if getattr(c.delta, "reasoning_content", None) or c.delta.content
    ]
    assert kinds == sorted(kinds, key=["reasoning", "content"].index)  # no interleaving
    assert len(choices) > 3  # delta by delta, not one lump at the end
    assert [c.finish_reason for c in choices[:-1]] == [None] * (len(choices) - 1)
    assert choices[-1].finish_reason == "stop"
    assert final.choices[0].message.content == "It is sunny in Tokyo."


def test_harmony_tool_call(harmony):
    [choice] = ask(harmony, HARMONY_CALL, "<|call|>", tools=TOOLS).choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.reasoning_content == "Need the weather tool."
    [call] = choice.message.tool_calls
    assert call.id.startswith("call_") and call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == ARGUMENTS


def test_harmony_tool_call_streams_openai_deltas(harmony):
    choices, final = streamed(harmony, HARMONY_CALL, "<|call|>", tools=TOOLS)
    calls = [c.delta.tool_calls[0] for c in choices if c.delta.tool_calls]
    head, rest = calls[0], calls[1:]
    assert head.index == 0 and head.id.startswith("call_") and head.type == "function"
    assert (head.function.name, head.function.arguments) == ("get_weather", "")
    assert rest and all(c.id is None and c.function.name is None for c in rest)
    assert json.loads("".join(c.function.arguments for c in rest)) == ARGUMENTS
    assert joined(choices, "reasoning_content") == "Need the weather tool."
    assert choices[-1].finish_reason == "tool_calls"
    [whole] = final.choices
    assert whole.finish_reason == "tool_calls"
    assert whole.message.tool_calls[0].function.name == "get_weather"


def test_reasoning_format_none_keeps_the_reply_inline(harmony):
    """As llama-server's `reasoning_format: none`: the text as the model wrote it."""
    out = ask(harmony, HARMONY_ANSWER, "<|return|>", extra_body={"reasoning_format": "none"})
    [choice] = out.choices
    assert choice.message.content == HARMONY_ANSWER
    assert getattr(choice.message, "reasoning_content", None) is None


def test_server_reasoning_format_none(tmp_path_factory, base):
    for served in _serve(
        tmp_path_factory, base, think_assets(), ServerConfig(reasoning_format="none")
    ):
        choices, final = streamed(served, THINK_ANSWER, "<|im_end|>")
        assert joined(choices, "content") == THINK_ANSWER
        assert joined(choices, "reasoning_content") == ""
        [choice] = ask(
            served, THINK_ANSWER, "<|im_end|>", extra_body={"reasoning_format": "auto"}
        ).choices
        assert choice.message.reasoning_content == "The user wants the weather."


def test_think_reply_splits_the_same_way(think):
    [choice] = ask(think, THINK_ANSWER, "<|im_end|>").choices
    assert choice.message.reasoning_content == "The user wants the weather."
    assert choice.message.content == "It is sunny in Tokyo."
    choices, final = streamed(think, THINK_ANSWER, "<|im_end|>")
    assert joined(choices, "reasoning_content") == "The user wants the weather."
    assert joined(choices, "content") == "It is sunny in Tokyo."
    assert final.choices[0].message.content == "It is sunny in Tokyo."


def test_think_then_a_generic_tool_call(think):
    """Qwen3's `<tool_call>` block after its reasoning: the generic parser finds the call."""
    [choice] = ask(think, THINK_CALL, "<|im_end|>", tools=TOOLS).choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.reasoning_content == "Need the weather tool."
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == ARGUMENTS


def test_unknown_reasoning_format_is_a_400(think):
    client = think.client(max_retries=0)
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(
            model=think.model, messages=MESSAGES, extra_body={"reasoning_format": "deepseek-legacy"}
        )
    assert err.value.body["param"] == "reasoning_format"
    assert "auto, none, think, harmony" in err.value.body["message"]


def test_qwen3_5_xml_tool_call_whole_and_streamed(qwen3_5):
    """Qwen3.5's template teaches `<function=...><parameter=...>` calls: they come back as
    OpenAI tool calls, each value read as its parameter's type."""
    [choice] = ask(qwen3_5, XML_CALL, "<|im_end|>", tools=XML_TOOLS, max_tokens=400).choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert choice.message.reasoning_content == "Need the weather tool."
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == XML_ARGUMENTS
    choices, final = streamed(qwen3_5, XML_CALL, "<|im_end|>", tools=XML_TOOLS, max_tokens=400)
    calls = [c.delta.tool_calls[0] for c in choices if c.delta.tool_calls]
    assert calls[0].function.name == "get_weather" and len(calls) > 2  # parameter by parameter
    assert json.loads("".join(c.function.arguments for c in calls[1:])) == XML_ARGUMENTS
    assert choices[-1].finish_reason == "tool_calls"
    assert final.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_qwen3_5_renders_the_call_back_as_it_reads_it(qwen3_5):
    """The next turn's prompt holds the call in the template's XML, which the parser reads
    back to the same arguments."""
    from mlcx.runtime.openai_api.call_syntax import SYNTAXES
    from mlcx.runtime.openai_api.tool_calls import ToolReply
    from mlcx.runtime.text.chat_template import ChatTemplate

    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps(XML_ARGUMENTS)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    template = ChatTemplate.of(qwen3_5.engine.tokenizer.assets)
    prompt = template.render(history, tools=XML_TOOLS)
    block = prompt[prompt.rindex("<tool_call>") : prompt.rindex("</tool_call>") + 12]
    parameters = {"get_weather": XML_TOOLS[0]["function"]["parameters"]}
    reply = ToolReply(False, scanner=SYNTAXES["xml"](parameters))
    [call] = reply.message(block)["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == XML_ARGUMENTS
