"""Structured output and a tool call with the real default model (SmolLM2-135M-Instruct)."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import serving

pytestmark = pytest.mark.slow
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def served(default_artifact):
    with serving(default_artifact()) as s:
        yield s


def test_named_tool_call_gets_the_city(served):
    out = served.client(max_retries=0).chat.completions.create(
        model=served.model,
        messages=[{"role": "user", "content": "What's the weather in Paris?"}],
        tools=[WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        temperature=0,
        max_tokens=40,
    )
    [choice] = out.choices
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert "Paris" in json.loads(call.function.arguments)["city"]


def test_capital_of_france_under_a_schema(served):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
        "required": ["city", "country"],
    }
    out = served.client(max_retries=0).chat.completions.create(
        model=served.model,
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
        temperature=0,
        max_tokens=40,
    )
    answer = json.loads(out.choices[0].message.content)
    assert "Paris" in answer["city"] and "France" in answer["country"]
