"""Constrained generation end to end on a random-weight tiny model, where nothing but the
constraint can make the output valid; outputs are checked with independent references
(jsonschema, json, re, the lark parser). Every string in the schemas is bounded (maxLength,
enum) so that a model rambling at random still closes its JSON well within max_tokens."""

from __future__ import annotations

import json
import re

import jsonschema
import lark
import pytest

from mlcx.errors import InvalidFieldError
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.api.request_output import RequestOutput
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.structured.constraint import Constraint

PROMPTS = ["The capital of France is", "hello world", "Numbers 2024", "what is the answer?"]
GREEDY = SamplingParams.greedy(max_tokens=200)
SEEDED = SamplingParams(max_tokens=200, temperature=1.0, seed=11)


def _string(max_length: int) -> dict:
    return {"type": "string", "maxLength": max_length}


def _object(properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


SCHEMAS = {
    "nested": _object(
        {
            "user": _object(
                {"name": _string(6), "id": {"type": "integer", "minimum": 1, "maximum": 999}},
                ["name", "id"],
            ),
            "active": {"type": "boolean"},
        },
        ["user"],
    ),
    "array": _object(
        {
            "items": {
                "type": "array",
                "items": {"type": "integer", "minimum": -5, "maximum": 5},
                "minItems": 1,
                "maxItems": 4,
            }
        },
        ["items"],
    ),
    "enums": _object(
        {
            "color": {"enum": ["red", "green", "blue"]},
            "size": {"type": "string", "enum": ["S", "L"]},
        },
        ["color", "size"],
    ),
    "bounds": _object(
        {
            "t": {"type": "number", "minimum": -1.5, "maximum": 2.5},
            "k": {"type": "integer", "minimum": 10, "maximum": 20},
            "note": _string(4),
        },
        ["t", "k"],
    ),
    "list_of_objects": {
        "type": "array",
        "items": _object(
            {"x": {"type": "integer", "minimum": 0, "maximum": 9}, "tag": _string(3)}, ["x"]
        ),
        "maxItems": 3,
    },
}
REGEX = r"[a-z]{2,5}-[0-9]{3}( [A-Z][a-z]{0,8})?"
GRAMMAR = r"""
start: stmt (";" stmt)*
stmt: NAME "=" expr
expr: NUMBER | NAME | "(" expr OP expr ")"
OP: "+" | "-" | "*"
NAME: /[a-z]{1,4}/
NUMBER: /[0-9]{1,3}/
"""


@pytest.fixture(scope="module")
def llm(compiled):
    return LLM(compiled())


def _valid(text: str, schema: dict) -> bool:
    try:
        jsonschema.validate(json.loads(text), schema)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def _texts(outputs: list[RequestOutput]) -> list[str]:
    for out in outputs:
        for c in out.outputs:
            assert c.finish_reason == "stop", (c.finish_reason, c.text)
    return [c.text for out in outputs for c in out.outputs]


@pytest.mark.parametrize("name", SCHEMAS)
@pytest.mark.parametrize("params", [GREEDY, SEEDED.with_updates(n=2)], ids=["greedy", "seeded"])
def test_json_schema_outputs_validate(llm, name, params):
    schema = SCHEMAS[name]
    constrained = params.with_updates(constraint=Constraint.json_schema(schema))
    for text in _texts(llm.generate(PROMPTS, constrained)):
        jsonschema.validate(json.loads(text), schema)
    # the model alone writes no JSON at all
    for out in llm.generate(PROMPTS, params.with_updates(max_tokens=30)):
        assert not _valid(out.outputs[0].text, schema)


def test_optional_keys_are_sometimes_given(llm):
    schema = SCHEMAS["bounds"]
    params = SEEDED.with_updates(n=8, constraint=Constraint.json_schema(schema))
    values = [json.loads(t) for t in _texts(llm.generate(PROMPTS, params))]
    assert {"note" in v for v in values} == {True, False}


def test_json_object_parses_to_a_dict(llm):
    # A bias towards closing quotes and braces only shortens what the constraint makes valid:
    # without the constraint these tokens alone make no JSON object.
    quote, brace = llm.tokenizer.token_to_id('"'), llm.tokenizer.token_to_id("}")
    params = SEEDED.with_updates(max_tokens=240, logit_bias={quote: 2.0, brace: 2.0}, n=3)
    for p in (GREEDY, params):
        out = llm.generate(PROMPTS, p.with_updates(constraint=Constraint("json_object")))
        for text in _texts(out):
            assert isinstance(json.loads(text), dict)


@pytest.mark.parametrize(
    "params",
    [GREEDY, SEEDED.with_updates(n=3), SEEDED.with_updates(n=3, ignore_eos=True)],
    ids=["greedy", "seeded", "ignore-eos"],
)
def test_regex_output_fullmatches(llm, params):
    out = llm.generate(PROMPTS, params.with_updates(constraint=Constraint("regex", REGEX)))
    for text in _texts(out):
        assert re.fullmatch(REGEX, text), text


@pytest.mark.parametrize("params", [GREEDY, SEEDED.with_updates(n=3)], ids=["greedy", "seeded"])
def test_lark_grammar_output_is_in_the_language(llm, params):
    parser = lark.Lark(GRAMMAR)
    out = llm.generate(PROMPTS, params.with_updates(constraint=Constraint("grammar", GRAMMAR)))
    for text in _texts(out):
        parser.parse(text)  # raises if the text is not in the language


def test_n_choices_each_carry_their_own_matcher(llm):
    schema = SCHEMAS["nested"]
    params = SEEDED.with_updates(n=3, constraint=Constraint.json_schema(schema))
    texts = _texts(llm.generate(PROMPTS[:1], params))
    for text in texts:
        jsonschema.validate(json.loads(text), schema)
    assert len(set(texts)) == 3


def _run(engine: Engine, requests: dict[str, tuple[str, SamplingParams]]) -> dict[str, list]:
    tokens: dict[str, list] = {rid: [] for rid in requests}
    for rid, (prompt, params) in requests.items():
        engine.add_request(rid, prompt, params)
    while engine.has_work():
        for delta in engine.step():
            tokens[delta.request_id].extend(delta.token_ids)
    return tokens


@pytest.mark.parametrize("params", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_unconstrained_requests_are_unchanged_by_constrained_neighbours(compiled, params):
    alone = _run(Engine(compiled()), {f"u{i}": (p, params) for i, p in enumerate(PROMPTS)})
    regex = params.with_updates(constraint=Constraint("regex", REGEX))
    schema = params.with_updates(constraint=Constraint.json_schema(SCHEMAS["array"]))
    mixed = {f"u{i}": (p, params) for i, p in enumerate(PROMPTS)}
    mixed |= {f"r{i}": (p, regex) for i, p in enumerate(PROMPTS)}
    mixed |= {f"s{i}": (p, schema) for i, p in enumerate(PROMPTS)}
    engine = Engine(compiled(), EngineConfig(max_batch=12))
    out = _run(engine, mixed)
    assert {rid: out[rid] for rid in alone} == alone
    for i in range(len(PROMPTS)):
        assert re.fullmatch(REGEX, engine.tokenizer.decode(out[f"r{i}"]))


def test_preempted_sequences_stay_valid(compiled):
    schema = SCHEMAS["list_of_objects"]
    params = SEEDED.with_updates(max_tokens=100, constraint=Constraint.json_schema(schema))
    long_prompts = [" ".join([p] * 10) for p in PROMPTS] * 2
    requests = {f"q{i}": (p, params.with_updates(seed=i)) for i, p in enumerate(long_prompts)}
    calm = _run(Engine(compiled()), requests)
    engine = Engine(compiled(), EngineConfig(kv_blocks=12, prefill_chunk=32))
    tight = _run(engine, requests)
    assert engine.stats().preemptions > 0
    assert tight == calm
    for tokens in tight.values():
        jsonschema.validate(json.loads(engine.tokenizer.decode(tokens)), schema)
    assert engine.kv.pool.num_used == 0


@pytest.mark.parametrize(
    ("constraint", "message"),
    [
        (Constraint("json_schema", '{"type": "strin"}', "response_format"), "strin"),
        (Constraint("regex", "[a-", "regex"), "unclosed character class"),
        (Constraint("grammar", "start: foo\nfoo: bar", "grammar"), 'unknown name: "bar"'),
        (
            Constraint.json_schema({"type": "string", "pattern": "(["}, "tools"),
            "unclosed character class",
        ),
    ],
    ids=["schema", "regex", "grammar", "schema-pattern"],
)
def test_a_refused_constraint_is_an_invalid_field_when_added(llm, constraint, message):
    params = GREEDY.with_updates(constraint=constraint)
    with pytest.raises(InvalidFieldError, match=re.escape(message)) as err:
        llm.generate(PROMPTS, params)
    assert err.value.param == constraint.param
    assert str(err.value).startswith(f"{constraint.param}: ") and "\n" not in str(err.value)
    with pytest.raises(InvalidFieldError, match=re.escape(message)):
        llm.engine.add_request("refused", PROMPTS[0], params)
    assert not llm.engine.has_work()  # nothing was queued


def test_constrained_logprobs_cover_only_allowed_tokens(llm):
    params = GREEDY.with_updates(
        logprobs=True, top_logprobs=5, constraint=Constraint("regex", "(yes|no)")
    )
    [c] = llm.generate(PROMPTS[:1], params)[0].outputs
    assert c.text in ("yes", "no")
    for result in c.logprobs:
        assert result.logprob is not None and result.logprob > float("-inf")
        assert result.top_logprobs is not None
        assert all(lp > float("-inf") for _, lp in result.top_logprobs)
        assert result.token_id in [t for t, _ in result.top_logprobs]
