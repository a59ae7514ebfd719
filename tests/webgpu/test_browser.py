"""End to end in headless Chromium (WebGPU on SwiftShader): `mlcx web` serves a tiny f32
artifact, the test types a prompt into the demo and compares the streamed greedy tokens with
the Python wgpu backend's for the same chat prompt."""

from __future__ import annotations

import pytest

from mlcx.runtime.llm import LLM
from mlcx.runtime.sample.params import SamplingParams

pytestmark = pytest.mark.browser
PROMPT = "The capital of France is"
MAX_TOKENS = 12


@pytest.fixture
def served(mlcx_web, webgpu_artifact):
    artifact = webgpu_artifact("q0f32")
    return artifact, mlcx_web(artifact)


def test_streamed_greedy_tokens_equal_the_python_backend(served, tmp_path):
    from mlcx.web.browser import browser_page, send_chat, wait_ready

    artifact, url = served
    with browser_page(url) as page:
        wait_ready(page)
        assert "swiftshader" in page.inner_text("#model").lower()
        reply, _ = send_chat(page, PROMPT, MAX_TOKENS)
        shown = page.inner_text(".msg.assistant")
        page.screenshot(path=str(tmp_path / "demo.png"))
    llm = LLM(str(artifact))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": PROMPT}])
    [[want]] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=MAX_TOKENS))
    assert reply["promptIds"] == prompt_ids
    assert reply["tokenIds"] == want.token_ids
    assert reply["text"] == want.text and "tok/s" in shown
    assert reply["stats"]["tokPerS"] > 0
