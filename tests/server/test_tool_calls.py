"""Tool calling through the official client on a random-weight tiny model: forced calls
(a named function, `required`) carry arguments valid against the tool's schema, streamed
(reassembled as the client's own stream helper does) and not."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.support.tiny_models import TinySpec

MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]
BOUNDED = {"max_tokens": 200, "temperature": 0}
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 8},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TIME = {
    "type": "object",
    "properties": {"zone": {"type": "integer", "minimum": -12, "maximum": 14}},
    "required": ["zone"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
NAMED = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def artifact(compiled):
    """A longer context: the tiny tokenizer spends many tokens on the tool listing."""
    return compiled(TinySpec(context=2048))


def end_arrays(served) -> dict:
    """A random model would add calls to a `required` array forever: favour its "]" (the
    arguments schemas have no arrays, so nothing else is affected)."""
    [token] = served.engine.tokenizer.encode("]", add_special_tokens=False)
    return {"logit_bias": {str(token): 10}}


def assert_valid_calls(calls) -> None:
    assert calls
    for call in calls:
        assert call.type == "function" and call.id.startswith("call_")
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def test_named_tool_call(served, client):
    out = client.chat.completions.create(
        model=served.model, messages=MESSAGES, tools=TOOLS, tool_choice=NAMED, **BOUNDED
    )
    [choice] = out.choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert_valid_calls([call])


@pytest.mark.parametrize("parallel", [True, False])
def test_required_tool_calls(served, client, parallel):
    out = client.chat.completions.create(
        model=served.model,
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice="required",
        parallel_tool_calls=parallel,
        **BOUNDED,
        **end_arrays(served),
    )
    [choice] = out.choices
    assert choice.finish_reason == "tool_calls"
    assert_valid_calls(choice.message.tool_calls)
    if not parallel:
        assert len(choice.message.tool_calls) == 1


def test_streamed_named_call_has_openai_deltas(served, client):
    stream = client.chat.completions.create(
        model=served.model,
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice=NAMED,
        stream=True,
        **BOUNDED,
    )
    chunks = [c for c in stream if c.choices]
    deltas = [c.choices[0].delta for c in chunks]
    assert deltas[0].role == "assistant"
    calls = [d.tool_calls[0] for d in deltas if d.tool_calls]
    head, rest = calls[0], calls[1:]
    assert head.index == 0 and head.id.startswith("call_") and head.type == "function"
    assert head.function.name == "get_weather" and head.function.arguments == ""
    assert rest and all(c.id is None and c.function.name is None for c in rest)
    arguments = "".join(c.function.arguments for c in rest)
    jsonschema.validate(json.loads(arguments), WEATHER)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


def test_streamed_call_equals_non_streamed(served, client):
    """The client's stream helper reassembles the deltas into the same call."""
    kwargs = {"model": served.model, "messages": MESSAGES, "tools": TOOLS, **BOUNDED}
    kwargs.update(end_arrays(served))
    full = client.chat.completions.create(tool_choice="required", **kwargs)
    with client.chat.completions.stream(tool_choice="required", **kwargs) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    [streamed], [whole] = final.choices, full.choices
    assert streamed.finish_reason == whole.finish_reason == "tool_calls"
    pairs = zip(streamed.message.tool_calls, whole.message.tool_calls, strict=True)
    for got, want in pairs:
        assert got.function.name == want.function.name
        assert json.loads(got.function.arguments) == json.loads(want.function.arguments)
    assert_valid_calls(streamed.message.tool_calls)


def test_tool_choice_none_and_auto_answer_with_content(served, client):
    for choice in ("none", "auto"):
        out = client.chat.completions.create(
            model=served.model,
            messages=MESSAGES,
            tools=TOOLS,
            tool_choice=choice,
            max_tokens=4,
            temperature=0,
            extra_body={"ignore_eos": True},
        )
        message = out.choices[0].message
        assert message.tool_calls is None and isinstance(message.content, str)


def test_a_conversation_with_calls_and_results_runs(served, client):
    """The assistant's calls and the tool's result on the next turn reach the template."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'},
    }
    messages = [
        *MESSAGES,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees"},
    ]
    seen = []
    render = served.engine.prompts.chat_template.render

    def recording(messages, add_generation_prompt=True, tools=None):
        seen.append(render(messages, add_generation_prompt, tools))
        return seen[-1]

    served.engine.prompts.chat_template.render = recording
    try:
        client.chat.completions.create(
            model=served.model, messages=messages, tools=TOOLS, max_tokens=2
        )
    finally:
        del served.engine.prompts.chat_template.render
    [prompt] = seen
    assert '"name": "get_weather"' in prompt and '"city": "Paris"' in prompt
    assert "18 degrees" in prompt and "get_time" in prompt


AUTO_CALL = '<tool_call>\n{"name": "get_time", "arguments": {"zone": 2}}\n</tool_call>'


@pytest.mark.parametrize("stream", [False, True])
def test_auto_parses_the_generic_format(served, client, stream):
    """A reply in the documented <tool_call> format (forced here by a regex) becomes a call."""
    kwargs = {"model": served.model, "messages": MESSAGES, "tools": TOOLS, **BOUNDED}
    regex = {"regex": AUTO_CALL.replace("{", r"\{").replace("}", r"\}")}
    if not stream:
        out = client.chat.completions.create(tool_choice="auto", extra_body=regex, **kwargs)
        message, reason = out.choices[0].message, out.choices[0].finish_reason
    else:
        with client.chat.completions.stream(extra_body=regex, **kwargs) as events:
            out = events.get_final_completion()
        message, reason = out.choices[0].message, out.choices[0].finish_reason
    assert reason == "tool_calls" and not message.content
    [call] = message.tool_calls
    assert call.function.name == "get_time" and json.loads(call.function.arguments) == {"zone": 2}
