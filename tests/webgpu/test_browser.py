"""End to end in headless Chromium (WebGPU on SwiftShader): `mlcx web` serves a tiny f32
artifact, the test types a prompt into the demo and compares the streamed greedy tokens with
the Python wgpu backend's for the same chat prompt."""

from __future__ import annotations

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams

pytestmark = pytest.mark.browser
PROMPT = "The capital of France is"
MAX_TOKENS = 12
# gc() in the page, and a heap size that is exact rather than bucketed and cached
HEAP_FLAGS = ("--js-flags=--expose-gc", "--enable-precise-memory-info")


@pytest.fixture
def served(mlcx_web, webgpu_artifact):
    artifact = webgpu_artifact("q0f32")
    return artifact, mlcx_web(artifact)


def _assert_page_streams_the_python_backend_s_tokens(artifact, url, screenshot=None) -> None:
    from mlcx.web.browser import browser_page, send_chat, wait_ready

    with browser_page(url) as page:
        wait_ready(page)
        assert "swiftshader" in page.inner_text("#model").lower()
        reply, _ = send_chat(page, PROMPT, MAX_TOKENS)
        shown = page.inner_text(".msg.assistant")
        if screenshot:
            page.screenshot(path=str(screenshot))
    llm = LLM(str(artifact))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": PROMPT}])
    [want] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=MAX_TOKENS))[0].outputs
    assert len(want.token_ids) == MAX_TOKENS  # no early end: every step is compared
    assert reply["promptIds"] == prompt_ids
    assert reply["tokenIds"] == want.token_ids
    assert reply["text"] == want.text and "tok/s" in shown
    assert reply["stats"]["tokPerS"] > 0


def test_streamed_greedy_tokens_equal_the_python_backend(served, tmp_path):
    _assert_page_streams_the_python_backend_s_tokens(*served, tmp_path / "demo.png")


def test_an_int8_kv_plan_streams_the_python_backend_s_tokens(mlcx_web, webgpu_artifact):
    """`--kv-dtype int8`: the JS runtime sizes the pages (uint32 words) from the plan and runs
    the same quantizing kernels as the Python wgpu backend, token for token."""
    artifact = webgpu_artifact("q0f32", kv_dtype="int8")
    _assert_page_streams_the_python_backend_s_tokens(artifact, mlcx_web(artifact))


def test_a_k_quant_file_streams_the_python_backend_s_tokens(mlcx_web, tiny_model, tmp_path):
    """A Q4_K_M-style GGUF (Q4_K, Q6_K, Q5_0, Q5_1, Q8_0 blocks kept) in the browser: the JS
    runtime runs the same plan and kernels as the Python wgpu backend, token for token."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model
    from tests.support.kquant_files import KQUANT_SPEC, write_mix

    path = write_mix(tiny_model(KQUANT_SPEC), tmp_path / "q4_k_m.gguf", "q4_k_m")
    artifact = compile_model(CompileRequest(str(path), "webgpu", "gguf", output=tmp_path / "web"))
    _assert_page_streams_the_python_backend_s_tokens(artifact, mlcx_web(artifact))


def test_a_long_chat_adds_no_step_buffers(served):
    """A tab that chats on keeps its step buffers bounded (issue 32): the pool keeps power-of-two
    size classes, so once a mix of prompt lengths has been seen (with and without prefix-cache
    hits), turns of that mix create no new buffer and the JS heap stays put."""
    from mlcx.web.browser import browser_page, wait_ready

    _, url = served
    with browser_page(url, flags=HEAP_FLAGS) as page:
        wait_ready(page)
        seen = []
        for turn in range(16):
            page.evaluate("window.mlcx.reset()")
            words = " ".join(["capital"] * (1 + 7 * (turn % 4)))
            page.evaluate("(t) => window.mlcx.chat(t, {maxTokens: 6, temperature: 0})", words)
            page.evaluate("gc()")  # what stays alive, not when V8 last collected
            seen.append(page.evaluate("window.mlcx.memory()"))
        warm = seen[8:]
        assert warm[0]["poolBuffers"] > 0
        assert {m["poolBuffers"] for m in warm} == {warm[0]["poolBuffers"]}
        heap = [m["jsHeapBytes"] for m in warm]
        assert max(heap) < 1.5 * min(heap)
