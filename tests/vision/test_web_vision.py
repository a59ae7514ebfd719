"""The tiny Gemma 3 with images in headless Chromium (WebGPU on SwiftShader): a page imports
`/mlcx-web/index.js`, loads the webgpu artifact (text plan and the encoder's plan) and answers
OpenAI-shaped requests whose image is a `data:` PNG. The image is decoded and preprocessed in
JS (Pillow's resize reproduced; web/test/images.test.mjs), encoded on WebGPU, and the answer's
tokens equal the cpu artifact's greedy tokens for the same image."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest

from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.llm import LLM
from mlcx.runtime.sample.params import SamplingParams

pytestmark = pytest.mark.browser
QUESTION = "what is this?"
MAX_TOKENS = 32
SCENARIO = Path(__file__).parents[1] / "webgpu" / "js" / "vision_scenario.js"


def _data_url(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@pytest.fixture(scope="module")
def answers(browser_ready, webgpu_vision, photo):
    from mlcx.web.browser import browser_page
    from mlcx.web.server import serve_in_background, url_of

    server = serve_in_background(webgpu_vision)
    try:
        with browser_page(url_of(server) + "style.css") as page:
            args = {"QUESTION": QUESTION, "IMAGE_URL": _data_url(photo), "MAX_TOKENS": MAX_TOKENS}
            return page.evaluate(SCENARIO.read_text(), args)
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def cpu(vision_artifact):
    return LLM(str(vision_artifact), EngineConfig(kv_blocks=64))


def _greedy(llm, ids, images, max_tokens=MAX_TOKENS):
    params = SamplingParams.greedy(max_tokens=max_tokens, ignore_eos=True)
    [[completion]] = llm.generate([ids], params, images=[images])
    return completion.token_ids


def test_the_image_answer_equals_the_cpu_artifact_s_tokens(answers, cpu, photo):
    parts = [{"type": "text", "text": QUESTION}, {"type": "image", "image": photo}]
    ids, images = cpu.chat_inputs([{"role": "user", "content": parts}])
    first = answers["first"]
    assert first["prompt_token_ids"] == ids  # the image's tokens laid out as Python lays them
    want = _greedy(cpu, ids, images)
    assert first["choices"][0]["token_ids"] == want
    assert len(set(want)) > 4  # not a degenerate repeat


def test_the_same_image_next_turn_is_not_encoded_again(answers):
    assert answers["encodedAfterFirst"] == answers["encodedAfterAgain"] == 1
    again = answers["again"]
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] >= 16  # the image's page
    assert again["choices"][0]["token_ids"] == answers["first"]["choices"][0]["token_ids"]


def test_a_text_prompt_still_answers_as_the_cpu_artifact(answers, cpu):
    ids, _ = cpu.chat_inputs([{"role": "user", "content": QUESTION}])
    assert answers["text"]["choices"][0]["token_ids"] == _greedy(cpu, ids, [], 4)


def test_a_bad_image_is_refused_naming_its_part(answers):
    bad = answers["bad"]
    assert bad["name"] == "InvalidRequestError" and bad["param"] == "messages.0.content.0"
    assert "cannot be decoded" in bad["message"]
