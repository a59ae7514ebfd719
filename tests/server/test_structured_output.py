"""response_format and the regex extra field, through the official client, on a random-weight
tiny model: only the constraint can make its output parse.

Every schema bounds its strings, numbers and arrays and forbids extra keys, so that even a
random model's output closes well within max_tokens.
"""

from __future__ import annotations

import json
import re
from typing import Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

MESSAGES = [{"role": "user", "content": "Describe a city as JSON."}]
BOUNDED = {"max_tokens": 200, "temperature": 0}

SCHEMAS = {
    "nested": {
        "type": "object",
        "properties": {
            "person": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 6},
                    "age": {"type": "integer", "minimum": 0, "maximum": 120},
                },
                "required": ["name", "age"],
                "additionalProperties": False,
            },
            "ok": {"type": "boolean"},
        },
        "required": ["person", "ok"],
        "additionalProperties": False,
    },
    "array-of-enums": {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"enum": ["red", "green", "blue"]},
                "minItems": 1,
                "maxItems": 3,
            }
        },
        "required": ["tags"],
        "additionalProperties": False,
    },
    "bounded-numbers": {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": -5, "maximum": 5},
            # multipleOf bounds the digits too (a random model never ends 0.3458202503...)
            "ratio": {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.25},
        },
        "required": ["count", "ratio"],
        "additionalProperties": False,
    },
    "optional-keys": {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 1, "maximum": 9},
            "note": {"type": "string", "maxLength": 4},
            "kind": {"enum": ["a", "b"]},
        },
        "required": ["id"],
        "additionalProperties": False,
    },
    "array-of-objects": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 9}},
            "required": ["x"],
            "additionalProperties": False,
        },
        "minItems": 1,
        "maxItems": 2,
    },
}


class City(BaseModel):
    name: str = Field(max_length=8)
    country: Literal["France", "Italy"]
    population: int = Field(ge=0, le=999)


def _schema_format(name: str) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": SCHEMAS[name]}}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_json_schema_output_validates(served, client, name):
    out = client.chat.completions.create(
        model=served.model, messages=MESSAGES, response_format=_schema_format(name), **BOUNDED
    )
    [choice] = out.choices
    assert choice.finish_reason == "stop", choice.message.content
    jsonschema.validate(json.loads(choice.message.content), SCHEMAS[name])


@pytest.mark.parametrize("name", ["nested", "array-of-enums"])
def test_json_schema_streamed_and_sampled_validates(served, client, name):
    """Sampling (not greedy) and streaming: each of several choices validates."""
    stream = client.chat.completions.create(
        model=served.model,
        messages=MESSAGES,
        response_format=_schema_format(name),
        stream=True,
        n=3,
        seed=7,
        temperature=1.0,
        max_tokens=200,
    )
    texts = ["", "", ""]
    for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
    for text in texts:
        jsonschema.validate(json.loads(text), SCHEMAS[name])


def test_json_object_output_is_an_object(served, client):
    out = client.chat.completions.create(
        model=served.model,
        messages=MESSAGES,
        response_format={"type": "json_object"},
        # an unbounded object: favour the closing brace so a random model ends it
        logit_bias={str(_token(served, "}")): 8},
        **BOUNDED,
    )
    parsed = json.loads(out.choices[0].message.content)
    jsonschema.validate(parsed, {"type": "object"})


def test_parse_returns_the_pydantic_object(served, client):
    out = client.chat.completions.parse(
        model=served.model, messages=MESSAGES, response_format=City, **BOUNDED
    )
    city = out.choices[0].message.parsed
    assert isinstance(city, City) and city.country in ("France", "Italy")


@pytest.mark.parametrize("pattern", [r"[0-9]{3}-[a-z]{2,4}", r"(yes|no), (red|blue)!"])
def test_regex_output_matches(served, client, pattern):
    out = client.chat.completions.create(
        model=served.model, messages=MESSAGES, extra_body={"regex": pattern}, **BOUNDED
    )
    assert re.fullmatch(pattern, out.choices[0].message.content)
    completion = client.completions.create(
        model=served.model, prompt="Code:", extra_body={"regex": pattern}, **BOUNDED
    )
    assert re.fullmatch(pattern, completion.choices[0].text)


def test_grammar_output_matches(served, client):
    grammar = 'start: "say " WORD "!"\nWORD: /[a-z]{1,5}/'
    out = client.completions.create(
        model=served.model, prompt="x", extra_body={"grammar": grammar}, **BOUNDED
    )
    assert re.fullmatch(r"say [a-z]{1,5}!", out.choices[0].text)


def test_text_format_is_unconstrained(served, client):
    out = client.chat.completions.create(
        model=served.model,
        messages=MESSAGES,
        response_format={"type": "text"},
        max_tokens=5,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    assert out.choices[0].finish_reason == "length"


def _token(served, text: str) -> int:
    [token] = served.engine.tokenizer.encode(text, add_special_tokens=False)
    return token
