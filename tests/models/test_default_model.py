"""The real default model (SmolLM2-135M-Instruct, Q4_1 GGUF from PyPI) end to end."""

from __future__ import annotations

import json

import jsonschema
import pytest

from mlcx.artifact.config import Artifact
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.structured.constraint import Constraint
from tests.support.cli import run_mlcx
from tests.support.default_model import default_gguf
from tests.support.hf_gguf_greedy import hf_gguf_greedy

pytestmark = pytest.mark.slow
PROMPT = "The history of the Roman Empire is"


# the default KV cache (f16, as llama.cpp's) and f32 pages, as the math
@pytest.fixture(scope="module", params=[None, "float32"], ids=["kv-default", "kv-f32"])
def artifact(request, default_artifact):
    return default_artifact(request.param)


def test_the_default_artifact_keeps_an_f16_kv_cache(default_artifact):
    assert Artifact(default_artifact()).config.cache_dtype == "float16"


@pytest.fixture(scope="module")
def transformers_greedy():
    """(prompt ids, 32 greedy tokens) of HF transformers on the same GGUF."""
    return hf_gguf_greedy(default_gguf(), PROMPT, 32)


def test_chat_answers_paris(artifact):
    result = run_mlcx(
        "generate",
        str(artifact),
        "--chat",
        "--prompt",
        "What is the capital of France?",
        "--temperature",
        "0",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert "Paris" in json.loads(result.stdout)["text"]


def test_chat_answers_paris_under_a_json_schema(artifact):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
        "required": ["city", "country"],
    }
    llm = LLM(artifact)
    prompt = llm.chat_prompt([{"role": "user", "content": "What is the capital of France?"}])
    params = SamplingParams.greedy(max_tokens=64, constraint=Constraint.json_schema(schema))
    [answer] = llm.generate([prompt], params)[0].outputs
    assert answer.finish_reason == "stop", answer.text
    value = json.loads(answer.text)
    jsonschema.validate(value, schema)
    assert (value["city"], value["country"]) == ("Paris", "France")


def test_greedy_tokens_equal_transformers_on_the_same_gguf(artifact, transformers_greedy):
    prompt_ids, want = transformers_greedy
    llm = LLM(artifact)
    assert llm.tokenizer.encode(PROMPT) == prompt_ids
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    [ours] = llm.generate([prompt_ids], params)[0].outputs
    assert ours.token_ids == want
