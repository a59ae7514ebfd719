"""docs/python.md's examples (and the README's) run as written, with only the model and the
adapter paths replaced (by the tiny greedy model with two LoRA slots and its two adapters,
tests/api/conftest.py), and print what mlcx's own calls give for the same requests."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from mlcx import LLM, SamplingParams

ROOT = Path(__file__).resolve().parents[2]
DOC, README = ROOT / "docs" / "python.md", ROOT / "README.md"
COLOURS = [{"role": "user", "content": "Name three colours."}]


def blocks(page: Path = DOC) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


@pytest.fixture(scope="module")
def run(greedy_artifact, greedy_adapters):
    paths = {
        "smollm2-135m": str(greedy_artifact),
        "adapters/sql-lora": str(greedy_adapters["a1"]),
        "adapters/poet-lora": str(greedy_adapters["a2"]),
    }

    def run(index: int, page: Path = DOC) -> str:
        code = blocks(page)[index]
        for name, path in paths.items():
            code = code.replace(name, path)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, {"__name__": "__main__"})
        return out.getvalue()

    return run


@pytest.fixture(scope="module")
def llm(greedy_artifact, greedy_adapters):
    return LLM(greedy_artifact, lora={"sql": greedy_adapters["a1"], "poet": greedy_adapters["a2"]})


def greedy(llm: LLM, max_tokens: int) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=max_tokens)


def test_the_page_has_its_four_examples():
    assert len(blocks()) == 4


def test_mlc_engine_example(run, llm):
    [answer] = llm.chat(COLOURS, greedy(llm, 32))
    text = answer.outputs[0].text
    assert text and run(0) == f"{text}\n{text}\n"


def test_async_mlc_engine_example(run, llm):
    outputs = llm.generate(["The capital of France is", "Name three colours:"], greedy(llm, 16))
    assert run(1) == "".join(f"{o.outputs[0].text!r}\n" for o in outputs)


def test_llm_example(run, llm):
    prompts = ["The capital of France is", "Hello, my name is"]
    lines = [
        f"{p!r} -> {o.outputs[0].text!r}"
        for p, o in zip(prompts, llm.generate(prompts, greedy(llm, 16)), strict=True)
    ]
    [answer] = llm.chat(COLOURS, greedy(llm, 16))
    assert run(2) == "\n".join([*lines, answer.outputs[0].text]) + "\n"


def test_lora_example(run, llm, greedy_artifact):
    prompts = ["List the tables:", "Write about the sea:", "The capital of France is"]
    texts = [
        llm.generate([p], greedy(llm, 12), lora)[0].outputs[0].text
        for p, lora in zip(prompts, ["sql", "poet", None], strict=True)
    ]
    assert len(set(texts)) == 3  # each adapter, and the base model, answers its own way
    sea = [{"role": "user", "content": "Write about the sea."}]
    [poem] = llm.chat(sea, greedy(llm, 12), "poet")
    printed = run(3).splitlines()
    assert printed[:4] == [*(repr(t) for t in texts), poem.outputs[0].text]
    name = LLM(greedy_artifact).engine.artifact.config.model_name
    assert printed[4] == repr([name, f"{name}:sql", f"{name}:poet"])


def test_readme_example(run, llm):
    [out] = llm.generate(["The capital of France is"], greedy(llm, 16))
    [hi] = llm.chat([{"role": "user", "content": "Hi!"}], greedy(llm, 32))
    python = [block for block in blocks(README) if "from mlcx import" in block]
    assert len(python) == 1 and blocks(README).index(python[0]) == 0
    assert run(0, README) == f"{out.outputs[0].text}\n{hi.outputs[0].text}"
