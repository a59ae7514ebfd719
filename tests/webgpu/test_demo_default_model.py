"""The demo with the real default model: `mlcx web` serves SmolLM2-135M compiled for webgpu
with f32 math, headless Chromium (WebGPU on SwiftShader) is asked the chat question through
the page, and the greedy reply names Paris. Speed is `mlcx bench web`'s business (it times
this same question); the seconds to answer are only printed here."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]
QUESTION = "What is the capital of France?"


def test_the_demo_answers_the_capital_of_france(mlcx_web, default_webgpu):
    from mlcx.web.browser import browser_page, send_chat, wait_ready

    with browser_page(mlcx_web(default_webgpu)) as page:
        wait_ready(page)
        reply, seconds = send_chat(page, QUESTION, max_tokens=128)  # the page's default
        shown = page.inner_text(".msg.assistant")
    print(f"the demo answered {reply['text']!r} {seconds:.1f} s after Send")
    assert "Paris" in reply["text"] and "Paris" in shown
