"""Bad constraints and tools are a 400 with the OpenAI envelope naming the field: never a 500,
never a hang."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.server.test_bad_input import CHAT, envelope

USER = [{"role": "user", "content": "hi"}]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": CITY}}]
REQUIRED = {"tools": TOOLS, "tool_choice": "required"}


def schema_format(schema) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}


def tool(name="f", parameters=CITY) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def named(name: str) -> dict:
    return {"type": "function", "function": {"name": name}}


def bad_call(arguments: str) -> list[dict]:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return [*USER, {"role": "assistant", "content": None, "tool_calls": [call]}]


CASES = {
    "format-not-an-object": ({"response_format": "json"}, "response_format"),
    "format-unknown-type": ({"response_format": {"type": "xml"}}, "response_format"),
    "format-without-json-schema": ({"response_format": {"type": "json_schema"}}, "response_format"),
    "format-schema-not-an-object": ({"response_format": schema_format([1])}, "response_format"),
    "format-schema-unknown-type": (
        {"response_format": schema_format({"type": "foo"})},
        "response_format",
    ),
    "format-schema-bad-pattern": (
        {"response_format": schema_format({"type": "string", "pattern": "(("})},
        "response_format",
    ),
    "regex-unclosed-group": ({"regex": "(ab"}, "regex"),
    "regex-empty": ({"regex": ""}, "regex"),
    "grammar-syntax-error": ({"grammar": "start: ("}, "grammar"),
    "grammar-undefined-rule": ({"grammar": "start: missing"}, "grammar"),
    "format-and-regex": ({"response_format": {"type": "json_object"}, "regex": "a"}, "regex"),
    "regex-and-grammar": ({"regex": "a", "grammar": 'start: "a"'}, "grammar"),
    "format-and-required-tools": (
        {"response_format": {"type": "json_object"}, **REQUIRED},
        "tool_choice",
    ),
    "tool-choice-without-tools": ({"tool_choice": "required"}, "tool_choice"),
    "named-choice-without-tools": ({"tool_choice": named("f")}, "tool_choice"),
    "named-choice-unknown": ({"tools": TOOLS, "tool_choice": named("nope")}, "tool_choice"),
    "tool-choice-unknown-word": ({"tools": TOOLS, "tool_choice": "always"}, "tool_choice"),
    "tool-choice-without-name": (
        {"tools": TOOLS, "tool_choice": {"type": "function", "function": {}}},
        "tool_choice",
    ),
    "tool-choice-not-a-choice": ({"tools": TOOLS, "tool_choice": 3}, "tool_choice"),
    "tools-empty": ({"tools": []}, "tools"),
    "tool-not-a-function": ({"tools": [{"type": "code"}]}, "tools.0.type"),
    "tool-name-with-space": ({"tools": [tool("get weather")]}, "tools.0.function.name"),
    "tool-names-repeat": ({"tools": [tool(), tool()]}, "tools.1"),
    "tool-parameters-not-object-type": (
        {"tools": [tool(parameters={"type": "string"})]},
        "tools.0.function.parameters",
    ),
    "tool-parameters-bad-schema": (
        {"tools": [tool(parameters={"type": "object", "properties": {"a": {"type": "foo"}}})]},
        "tools.0.function.parameters",
    ),
    "tool-call-arguments-not-json": ({"messages": bad_call("{oops")}, "messages"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_constraint_or_tool_is_400(served, case):
    fields, param = CASES[case]
    body = {"model": served.model, "messages": USER, "max_tokens": 4, **fields}
    response = httpx.post(served.url + CHAT, json=body, timeout=30)
    assert response.status_code == 400, response.text
    error = envelope(response)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param, error


def test_bad_regex_on_completions_is_400(served):
    body = {"model": served.model, "prompt": "x", "regex": "[a-"}
    response = httpx.post(served.url + "/v1/completions", json=body, timeout=30)
    assert response.status_code == 400 and envelope(response)["param"] == "regex"


def test_bad_schema_through_the_client_then_the_server_still_answers(served, client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model=served.model,
            messages=USER,
            response_format=schema_format({"type": "foo"}),
            stream=True,
        )
    assert caught.value.body["param"] == "response_format"
    out = client.chat.completions.create(model=served.model, messages=USER, max_tokens=2)
    assert out.choices[0].finish_reason in ("stop", "length")
    served.wait_idle()
