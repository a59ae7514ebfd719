"""MLCEngine answers as the server does, because the server is AsyncMLCEngine behind HTTP: the
same request gives the same greedy reply, tool calls, JSON, logprobs and chunks (all but ids
and timestamps), and a request the server answers with 400 raises InvalidFieldError with the
same message and param in process (404: ModelNotFoundError)."""

from __future__ import annotations

import json

import httpx
import pytest

from mlcx import InvalidFieldError, MLCEngine, ModelNotFoundError
from tests.server.test_bad_input import CASES
from tests.server.test_tool_calls import MESSAGES, TOOLS, end_arrays
from tests.support.tiny_models import TinySpec

VOLATILE = {"id", "created"}
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}},
    "required": ["answer", "n"],
    "additionalProperties": False,
}
REQUESTS = {
    "greedy": {"messages": MESSAGES, "max_tokens": 16, "temperature": 0},
    "logprobs": {
        "messages": MESSAGES,
        "max_tokens": 6,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 3,
    },
    "seeded-n": {"messages": MESSAGES, "max_tokens": 8, "n": 2, "seed": 7, "temperature": 0.9},
    "stop": {"messages": MESSAGES, "max_tokens": 24, "temperature": 0, "stop": ["e"]},
    "json": {
        "messages": MESSAGES,
        "max_tokens": 60,
        "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}},
    },
}


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(TinySpec(context=2048))


@pytest.fixture(scope="module")
def engine(artifact):
    with MLCEngine(str(artifact)) as engine:
        yield engine


def _same(ours, theirs) -> None:
    """Equal as JSON, ids and timestamps aside (tool call ids are random on both sides)."""
    a, b = ours.model_dump(exclude=VOLATILE), theirs.model_dump(exclude=VOLATILE)
    for body in (a, b):
        for choice in body["choices"]:
            for call in (choice.get("message") or {}).get("tool_calls") or ():
                call.pop("id")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.parametrize("name", REQUESTS)
def test_chat_replies_equal_the_servers(served, client, engine, name):
    request = {"model": served.model, **REQUESTS[name]}
    _same(engine.chat.completions.create(**request), client.chat.completions.create(**request))


def test_json_reply_is_the_schemas(served, engine):
    reply = engine.chat.completions.create(**REQUESTS["json"])
    assert set(json.loads(reply.choices[0].message.content)) == {"answer", "n"}


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_time"}}]
)
def test_tool_calls_equal_the_servers(served, client, engine, choice):
    request = {
        "model": served.model,
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": choice,
        "max_tokens": 200,
        "temperature": 0,
        "extra_body": end_arrays(served),
    }
    ours = engine.chat.completions.create(**request)
    assert ours.choices[0].finish_reason == "tool_calls" and ours.choices[0].message.tool_calls
    _same(ours, client.chat.completions.create(**request))


def test_stream_chunks_equal_the_servers(served, client, engine):
    request = {"model": served.model, **REQUESTS["logprobs"], "stream": True}
    request["stream_options"] = {"include_usage": True}
    ours = list(engine.chat.completions.create(**request))
    theirs = list(client.chat.completions.create(**request))
    assert len(ours) == len(theirs) > 3
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)
    text = "".join(c.choices[0].delta.content or "" for c in ours if c.choices)
    whole = engine.chat.completions.create(**{**request, "stream": False, "stream_options": None})
    assert text == whole.choices[0].message.content


def test_completions_equal_the_servers(served, client, engine):
    request = {"model": served.model, "prompt": ["hello", "The capital"], "max_tokens": 5}
    request |= {"temperature": 0, "logprobs": 2, "echo": False}
    _same(engine.completions.create(**request), client.completions.create(**request))


@pytest.mark.parametrize("case", [c for c in CASES if c != "missing-model"])
def test_bad_requests_raise_what_the_server_answers(served, engine, case):
    (path, body), param = CASES[case]
    body = {**body, "model": served.model}
    answer = httpx.post(served.url + path, json=body)
    assert answer.status_code == 400
    create = engine.chat.completions.create if "messages" in body else engine.completions.create
    with pytest.raises(InvalidFieldError) as raised:
        create(**body)
    error = answer.json()["error"]
    assert (str(raised.value), raised.value.param) == (error["message"], error["param"])


def test_an_unknown_model_is_model_not_found(served, engine):
    answer = httpx.post(served.url + "/v1/completions", json={"model": "other", "prompt": "x"})
    with pytest.raises(ModelNotFoundError) as raised:
        engine.completions.create(model="other", prompt="x")
    assert answer.status_code == 404
    assert str(raised.value) == answer.json()["error"]["message"]


def test_models_list_and_default_model(served, engine, artifact):
    assert [m.id for m in engine.models.list()] == [served.model]
    reply = engine.completions.create(prompt="hello", max_tokens=3, temperature=0)
    assert reply.model == served.model  # no model given: the served one
    by_path = engine.completions.create(model=str(artifact), prompt="hello", max_tokens=3)
    assert by_path.model == str(artifact)
