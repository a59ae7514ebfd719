"""Qwen2.5-VL and Qwen3-VL in headless Chromium (WebGPU on SwiftShader, the f32 plans): the
demo page loads test_qwen_vl_webgpu.py's artifact (the same compile, a cache hit) and answers
OpenAI-shaped requests with a `data:` PNG at two sizes. The page resizes (Pillow's bicubic to
the image's smart_resize size), builds the encoder's patches and tables, lays out one image
token per merged token and turns RoPE by the 3-row M-RoPE positions, all in JS
(web/test/qwen_vl.test.mjs holds those to Python's); its prompt ids equal the Python API's, its
32 greedy tokens equal transformers' and the prompt's last logits are within 1e-4 of
transformers' (with 1-D positions in place of the grids' they are much further off)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.vision.conftest import random_image
from tests.vision.test_qwen_vl import SIZES, _hf, _messages, folder, kind, reference  # noqa: F401
from tests.vision.test_qwen_vl_webgpu import llm, webgpu_artifact  # noqa: F401 (fixtures)

pytestmark = pytest.mark.browser
QUESTION = "what is this?"
MAX_TOKENS = 32
TOL = 1e-4
SCENARIO = Path(__file__).parents[1] / "webgpu" / "js" / "qwen_vl_scenario.js"


def _data_url(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _images():
    return [random_image(7, size) for size in SIZES.values()]


@pytest.fixture(scope="module")
def answers(browser_ready, webgpu_artifact):  # noqa: F811
    from mlcx.web.browser import browser_page, wait_ready
    from mlcx.web.server import serve_in_background, url_of

    server = serve_in_background(webgpu_artifact)
    try:
        with browser_page(url_of(server)) as page:
            wait_ready(page)
            args = {
                "QUESTION": QUESTION,
                "IMAGE_URLS": [_data_url(im) for im in _images()],
                "MAX_TOKENS": MAX_TOKENS,
            }
            return page.evaluate(SCENARIO.read_text(), args)
    finally:
        server.shutdown()


@pytest.mark.parametrize("index", range(len(SIZES)), ids=list(SIZES))
def test_the_page_answers_with_transformers_greedy_tokens(
    answers,
    llm,  # noqa: F811
    folder,  # noqa: F811
    reference,  # noqa: F811
    index,
):
    image = _images()[index]
    ids, _ = llm.chat_inputs(_messages(image))
    answer = answers[index]["answer"]
    assert answer["prompt_token_ids"] == ids  # one image token per merged token, as Python
    with torch.no_grad():
        out = reference.generate(
            **_hf(llm, folder, ids, [image]),
            max_new_tokens=MAX_TOKENS,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    want = out[0, len(ids) :].tolist()
    assert answer["choices"][0]["token_ids"] == want
    assert len(set(want)) > 4  # not a degenerate repeat


@pytest.mark.parametrize("index", range(len(SIZES)), ids=list(SIZES))
def test_the_page_s_prompt_logits_match_transformers(
    answers,
    llm,  # noqa: F811
    folder,  # noqa: F811
    reference,  # noqa: F811
    index,
):
    image = _images()[index]
    ids, images = llm.chat_inputs(_messages(image))
    got = answers[index]
    assert [tuple(g) for g in got["grids"]] == [
        im.grid for im in llm.engine.images.encode(ids, images)
    ]
    with torch.no_grad():
        want = reference(**_hf(llm, folder, ids, [image])).logits[0, -1].numpy()
    error = np.abs(np.array(got["logits"]) - want).max()
    assert error <= TOL
    flat = np.abs(np.array(got["flat"]) - want).max()
    assert flat > max(20 * error, TOL)
