"""Constrained output in the browser (XGrammar's WASM, headless Chromium on SwiftShader) from the
random-weight tiny model, where only the constraint can make the output parse: a JSON-schema
reply that validates (and equals the Python engine's llguidance-constrained greedy reply), a
streamed one, a JSON object, an EBNF grammar, a named and a required tool call; a bad grammar
refused by name. One page, one engine load. (The worker engines' constrained replies are
checked in test_web_engine.py and test_web_service_worker.py, on engines those tests load.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.structured.constraint import Constraint
from tests.support.tiny_models import TinySpec

pytestmark = pytest.mark.browser
PROMPT = "Describe a city as JSON."
MAX_TOKENS = 80
SCENARIO = Path(__file__).parent / "js" / "structured_scenario.js"
# room for the generic tool prompt (~480 tokens of the tiny tokenizer); the spec
# tests/server/test_tool_calls.py compiles for the same reason
SPEC = TinySpec(context=2048)
# bounded, so that even a random model closes it well within MAX_TOKENS
SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 0, "maximum": 99},
        "color": {"enum": ["red", "green", "blue"]},
    },
    "required": ["count", "color"],
    "additionalProperties": False,
}
GRAMMAR = 'root ::= [a-z] [a-z] [a-z]? "-" [0-9] [0-9]?'
GRAMMAR_MATCH = re.compile(r"[a-z]{2,3}-[0-9]{1,2}")
PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]


@pytest.fixture(scope="module")
def answers(browser_ready, webgpu_artifact):
    from mlcx.web.browser import browser_page
    from mlcx.web.server import serve_in_background, url_of

    artifact = webgpu_artifact("q0f32", SPEC)
    server = serve_in_background(artifact)
    try:
        with browser_page(url_of(server) + "style.css") as page:
            args = {"PROMPT": PROMPT, "MAX_TOKENS": MAX_TOKENS, "SCHEMA": SCHEMA}
            args |= {"GRAMMAR": GRAMMAR, "TOOLS": TOOLS}
            return artifact, page.evaluate(SCENARIO.read_text(), args)
    finally:
        server.shutdown()


def _content(reply):
    [choice] = reply["choices"]
    assert choice["finish_reason"] == "stop"
    return choice["message"]["content"]


def test_a_json_schema_reply_validates_only_by_the_constraint(answers):
    _, out = answers
    with pytest.raises(json.JSONDecodeError):
        json.loads(out["free"]["choices"][0]["message"]["content"])
    jsonschema.validate(json.loads(_content(out["schema"])), SCHEMA)


def test_the_json_schema_reply_is_the_python_engine_s(answers):
    artifact, out = answers
    llm = LLM(str(artifact))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": PROMPT}])
    params = SamplingParams.greedy(max_tokens=MAX_TOKENS, constraint=Constraint.json_schema(SCHEMA))
    [want] = llm.generate([prompt_ids], params)[0].outputs
    assert _content(out["schema"]) == want.text


def test_a_streamed_sampled_json_schema_reply_validates(answers):
    _, out = answers
    chunks = out["schemaStream"]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    jsonschema.validate(json.loads(text), SCHEMA)


def test_json_object_and_grammar_replies_match(answers):
    _, out = answers
    assert isinstance(json.loads(_content(out["object"])), dict)
    assert GRAMMAR_MATCH.fullmatch(_content(out["grammar"]))


def test_a_named_tool_choice_is_a_call_of_that_function(answers):
    _, out = answers
    [choice] = out["tool"]["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    jsonschema.validate(json.loads(call["function"]["arguments"]), PARAMETERS)


def test_a_required_tool_choice_streams_calls(answers):
    _, out = answers
    deltas = [c["choices"][0] for c in out["toolStream"]]
    entries = [e for d in deltas for e in d["delta"].get("tool_calls", [])]
    assert entries and {e["function"].get("name") for e in entries if "id" in e} == {"get_weather"}
    assert deltas[-1]["finish_reason"] == "tool_calls"
    by_call: dict[int, str] = {}
    for e in entries:
        by_call[e["index"]] = by_call.get(e["index"], "") + e["function"]["arguments"]
    for arguments in by_call.values():
        jsonschema.validate(json.loads(arguments), PARAMETERS)


def test_a_bad_grammar_is_refused_by_name(answers):
    _, out = answers
    refused = out["refused"]
    assert (refused["name"], refused["param"]) == ("InvalidRequestError", "response_format")
    assert 'Rule "nowhere" is not defined' in refused["message"]
