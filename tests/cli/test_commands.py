"""The CLI's run commands on a compiled tiny model, checked against the Python API."""

from __future__ import annotations

import json

import pytest

from mlcx.runtime.api.chat_session import ChatSession
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from tests.support.cli import run_mlcx
from tests.support.tiny_models import TinySpec


@pytest.fixture(scope="module")
def artifact(compiled):
    return compiled(TinySpec(), "q0f32")


def test_generate_json_matches_python_api(artifact):
    result = run_mlcx(
        "generate",
        str(artifact),
        "--prompt",
        "The capital of France is",
        "--temperature",
        "0",
        "--max-tokens",
        "12",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) >= {"text", "token_ids", "prompt_token_ids", "finish_reason"}
    llm = LLM(artifact)
    [ref] = llm.generate(["The capital of France is"], SamplingParams.greedy(max_tokens=12))[
        0
    ].outputs
    assert out["prompt_token_ids"] == ref.prompt_token_ids
    assert out["token_ids"] == ref.token_ids and out["text"] == ref.text
    assert out["finish_reason"] == ref.finish_reason


def test_generate_chat_applies_the_template(artifact):
    result = run_mlcx(
        "generate",
        str(artifact),
        "--prompt",
        "hi",
        "--chat",
        "--json",
        "--temperature",
        "0",
        "--max-tokens",
        "4",
    )
    ids = json.loads(result.stdout)["prompt_token_ids"]
    llm = LLM(artifact)
    text = llm.tokenizer.decode(ids, skip_special_tokens=False)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_the_chat_template_is_stored_once_beside_the_config(artifact):
    config = json.loads((artifact / "mlcx-config.json").read_text())
    assert "conversation" not in config and "chat_template" not in json.dumps(config)
    tokenizer = json.loads((artifact / "mlcx-tokenizer.json").read_text())
    assert "<|im_start|>" in tokenizer["chat_template"]
    assert tokenizer["eos_token"] == "<|im_end|>"
    assert config["architecture"] == "llama" and config["target"] == "cpu"
    assert config["context_window"] == 256 and config["prefill_chunk"] == 512


def test_chat_session_keeps_the_conversation(artifact):
    llm = LLM(artifact)
    params = SamplingParams.greedy(max_tokens=6)
    session = ChatSession(llm, params, system="be brief")
    first = "".join(e.text for e in session.send("hello world"))
    second = "".join(e.text for e in session.send("what is the answer?"))
    roles = [m["role"] for m in session.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert session.messages[2]["content"] == first
    history = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello world"},
        {"role": "assistant", "content": first},
        {"role": "user", "content": "what is the answer?"},
    ]
    [ref] = llm.generate([llm.chat_prompt(history)], params)[0].outputs
    assert second == ref.text
    session.reset()
    assert [m["role"] for m in session.messages] == ["system"]


def test_chat_command_runs_turns_until_eof(artifact):
    result = run_mlcx(
        "chat",
        str(artifact),
        "--temperature",
        "0",
        "--max-tokens",
        "4",
        stdin="hello\n/reset\nwhat is the answer?\n",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(">>> ") == 4 and "(conversation cleared)" in result.stdout
