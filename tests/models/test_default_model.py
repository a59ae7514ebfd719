"""The real default model (SmolLM2-135M-Instruct, Q4_1 GGUF from PyPI) end to end."""

from __future__ import annotations

import json

import pytest

from mlcx.runtime.llm import LLM
from mlcx.runtime.sampling_params import SamplingParams
from tests.support.cli import run_mlcx
from tests.support.default_model import DEFAULT, default_gguf

pytestmark = pytest.mark.slow
PROMPT = "The history of the Roman Empire is"


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    default_gguf()  # downloads once into the mlcx cache
    out = tmp_path_factory.mktemp("default") / "smollm2"
    result = run_mlcx("compile", DEFAULT, "--target", "cpu", "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


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


def test_greedy_tokens_equal_transformers_on_the_same_gguf(artifact):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = default_gguf()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    )
    llm = LLM(artifact)
    prompt_ids = tokenizer(PROMPT)["input_ids"]
    assert llm.tokenizer.encode(PROMPT) == prompt_ids
    [[ours]] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=32, ignore_eos=True))
    with torch.no_grad():
        ref = model.generate(torch.tensor([prompt_ids]), max_new_tokens=32, do_sample=False)
    assert ours.token_ids == ref[0, len(prompt_ids) :].tolist()
