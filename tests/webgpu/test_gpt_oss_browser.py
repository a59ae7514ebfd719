"""The tiny gpt-oss (tests/support/gpt_oss_builds.py: llama.cpp's MXFP4 GGUF, compiled for
webgpu with f32 activations) in headless Chromium (WebGPU on SwiftShader): `mlcx web` serves its
plan and the demo streams the Python wgpu backend's greedy tokens for a harmony prompt longer
than the 16-token window, so the browser runs the attention sinks, the alternating sliding and
full layers, the MXFP4 experts and the clamped SwiGLU as the Python engine does."""

from __future__ import annotations

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.tiny_gpt_oss import WINDOW

pytestmark = pytest.mark.browser
MAX_TOKENS = 12


def test_the_demo_streams_the_python_backend_s_tokens(mlcx_web, gpt_oss):
    from mlcx.web.browser import browser_page, send_chat, wait_ready

    artifact = gpt_oss.artifact("gguf", "webgpu")
    with browser_page(mlcx_web(artifact)) as page:
        wait_ready(page)
        reply, _ = send_chat(page, "What is the weather in Tokyo?", MAX_TOKENS)
    assert len(reply["promptIds"]) > WINDOW
    llm = LLM(str(artifact), EngineConfig(enable_prefix_caching=False))
    [want] = llm.generate([reply["promptIds"]], SamplingParams.greedy(max_tokens=MAX_TOKENS))[
        0
    ].outputs
    assert reply["tokenIds"] == want.token_ids and len(want.token_ids) > 1
