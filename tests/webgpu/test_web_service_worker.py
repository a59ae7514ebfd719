"""The Service Worker engine in headless Chromium: a page registers the package's service worker
(`/mlcx-web/service_worker.js`), whose engine answers the Python backend's greedy tokens; after
a page reload the worker still holds the model, so the engine is there without a second load.
A reply under an EBNF grammar matches it (XGrammar in the service worker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.sample.params import SamplingParams

pytestmark = pytest.mark.browser
PROMPT = "The capital of France is"
MAX_TOKENS = 8
SCENARIO = Path(__file__).parent / "js" / "service_worker_scenario.js"
GRAMMAR = 'root ::= [a-z] [a-z] [a-z]? "-" [0-9]'


def test_the_service_worker_engine_answers_and_outlives_a_reload(browser_ready, webgpu_artifact):
    from mlcx.web.browser import browser_page
    from mlcx.web.server import serve_in_background, url_of

    artifact = webgpu_artifact("q0f32")
    server = serve_in_background(artifact)
    args = {"PROMPT": PROMPT, "MAX_TOKENS": MAX_TOKENS, "GRAMMAR": GRAMMAR}
    try:
        with browser_page(url_of(server) + "style.css") as page:
            first = page.evaluate(SCENARIO.read_text(), args)
            page.reload()
            second = page.evaluate(SCENARIO.read_text(), args)
    finally:
        server.shutdown()
    llm = LLM(str(artifact))
    prompt_ids = llm.chat_prompt([{"role": "user", "content": PROMPT}])
    [want] = llm.generate([prompt_ids], SamplingParams.greedy(max_tokens=MAX_TOKENS))[0].outputs
    assert first["reply"]["choices"][0]["token_ids"] == want.token_ids
    assert first["lastReport"] == "ready"
    assert second["lastReport"] == "already loaded in the service worker"
    assert second["reply"]["choices"] == first["reply"]["choices"]
    [constrained] = second["constrained"]["choices"]
    assert re.fullmatch(r"[a-z]{2,3}-[0-9]", constrained["message"]["content"])
    assert constrained["finish_reason"] == "stop"
