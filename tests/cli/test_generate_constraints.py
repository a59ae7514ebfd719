"""`mlcx generate --json-schema FILE | --regex R | --grammar FILE` on the tiny random model."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.structured.constraint import Constraint
from tests.support.cli import one_line_error, run_mlcx, run_mlcx_here
from tests.support.tiny_models import TinySpec

SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"enum": ["yes", "no"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 99},
        "why": {"type": "string", "maxLength": 6},
    },
    "required": ["answer", "score"],
    "additionalProperties": False,
}
LARK = 'start: ("yes" | "no") " " NUM\nNUM: /[0-9]{1,2}/\n'
GBNF = 'root ::= ("yes" | "no") " " [0-9] [0-9]?\n'


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(TinySpec(), "q0f32")


def _generate(artifact, *options: str, seed: str = "3") -> dict:
    args = ["--prompt", "what is the answer?", "--max-tokens", "120", "--seed", seed, "--json"]
    result = run_mlcx("generate", str(artifact), *args, *options)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["finish_reason"] == "stop"
    return out


def test_json_schema_file(artifact, tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    out = _generate(artifact, "--json-schema", str(path))
    jsonschema.validate(json.loads(out["text"]), SCHEMA)
    llm = LLM(artifact)
    params = llm.default_params(max_tokens=120, seed=3, constraint=Constraint.json_schema(SCHEMA))
    [ref] = llm.generate(["what is the answer?"], params)[0].outputs
    assert out["token_ids"] == ref.token_ids


def test_regex(artifact):
    regex = r"(yes|no), [a-z]{1,8}\."
    for seed in ("1", "2"):
        assert re.fullmatch(regex, _generate(artifact, "--regex", regex, seed=seed)["text"])


def test_lark_and_gbnf_grammar_files_constrain_alike(artifact, tmp_path):
    (tmp_path / "g.lark").write_text(LARK)
    (tmp_path / "g.gbnf").write_text(GBNF)
    lark = _generate(artifact, "--grammar", str(tmp_path / "g.lark"))
    gbnf = _generate(artifact, "--grammar", str(tmp_path / "g.gbnf"))
    assert re.fullmatch(r"(yes|no) [0-9]{1,2}", lark["text"])
    assert gbnf["token_ids"] == lark["token_ids"]  # the same language, the same seed


def test_the_constraint_options_exclude_each_other(artifact, tmp_path):
    result = run_mlcx_here("generate", str(artifact), "-p", "hi", "--regex", "a", "--grammar", "g")
    line = one_line_error(result)
    assert "--regex and --grammar exclude each other" in line


@pytest.mark.parametrize(
    ("option", "content", "expected"),
    [
        ("--json-schema", None, "cannot read"),
        ("--json-schema", "{not json", "not valid JSON"),
        ("--json-schema", '{"type": "strin"}', "invalid JSON schema: Invalid type: strin"),
        ("--regex", "[a-", "unclosed character class"),
        ("--grammar", "start: foo\nfoo: bar\n", 'unknown name: "bar"'),
        ("--grammar", "root ::= (\n", "not a valid GBNF grammar"),
    ],
    ids=["missing-file", "not-json", "bad-schema", "bad-regex", "bad-lark", "bad-gbnf"],
)
def test_a_bad_constraint_is_one_line_naming_the_option(
    artifact, tmp_path, option, content, expected
):
    value = content
    if option != "--regex":
        suffix = ".gbnf" if "::=" in (content or "") else ".txt"
        value = str(tmp_path / f"c{suffix}")
        if content is not None:
            (tmp_path / f"c{suffix}").write_text(content)
    args = ["-p", "hi", "--max-tokens", "8", option, value]
    line = one_line_error(run_mlcx_here("generate", str(artifact), *args))
    assert line.startswith(f"error: {option}: ") and expected in line


def test_constrained_greedy_matches_the_python_api(artifact):
    out = _generate(artifact, "--regex", "[a-z]{3,6}", "--temperature", "0")
    llm = LLM(artifact)
    params = SamplingParams.greedy(max_tokens=120, constraint=Constraint("regex", "[a-z]{3,6}"))
    [ref] = llm.generate(["what is the answer?"], params)[0].outputs
    assert out["token_ids"] == ref.token_ids and out["text"] == ref.text
