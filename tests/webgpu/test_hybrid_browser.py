"""A hybrid model (the tiny Qwen3.5, tests/support/hybrid_models.py) in headless Chromium
(WebGPU on SwiftShader): `mlcx web` serves its webgpu plan, the demo streams the Python wgpu
backend's greedy tokens, and the next chat turn resumes from the state the first turn saved
(its prompt's cached tokens) with the tokens of the whole prompt computed afresh."""

from __future__ import annotations

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.hybrid_models import compiled_hybrid

pytestmark = pytest.mark.browser
TURNS = ["The capital of France is Paris. The capital of Italy is", "and what is the answer?"]
PAGE = 16  # the artifact's page size: states are saved where a page ends
MAX_TOKENS = 12


def test_two_chat_turns_stream_the_python_backend_s_tokens(mlcx_web, tmp_path_factory):
    from mlcx.web.browser import browser_page, send_chat, wait_ready

    artifact = compiled_hybrid(tmp_path_factory, "qwen3_5", target="webgpu")
    with browser_page(mlcx_web(artifact)) as page:
        wait_ready(page)
        replies = [send_chat(page, text, MAX_TOKENS)[0] for text in TURNS]
    # each prompt computed from scratch by the Python backend, without the prefix cache
    llm = LLM(str(artifact), EngineConfig(enable_prefix_caching=False))
    greedy = SamplingParams.greedy(max_tokens=MAX_TOKENS)
    for reply in replies:
        [want] = llm.generate([reply["promptIds"]], greedy)[0].outputs
        assert reply["tokenIds"] == want.token_ids
    first, second = replies
    assert second["promptIds"][: len(first["promptIds"])] == first["promptIds"]
    # at least the state saved at the first prompt's last full page
    cached = second["stats"]["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= len(first["promptIds"]) // PAGE * PAGE > 0 and cached % PAGE == 0
