"""The tiny Gemma 3 with images in headless Chromium (WebGPU on SwiftShader): the demo page
loads the webgpu artifact (text plan and the encoder's plan); a PNG chosen in its image picker
goes with a typed question, then the page's engine answers OpenAI-shaped requests whose image
is a `data:` PNG. The image is decoded and preprocessed in JS (Pillow's resize reproduced;
web/test/images.test.mjs), encoded on WebGPU, and the answers' tokens equal the cpu artifact's
greedy tokens for the same image."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams

pytestmark = pytest.mark.browser
QUESTION = "what is this?"
MAX_TOKENS = 32
SCENARIO = Path(__file__).parents[1] / "webgpu" / "js" / "vision_scenario.js"


# formats the browser decodes for the engine, as Pillow must decode them too
DECODE = {
    "JPEG 4:2:0": ("JPEG", {"quality": 90}),
    "JPEG 4:4:4": ("JPEG", {"subsampling": 0}),
    "WebP": ("WEBP", {"quality": 80}),
    "WebP lossless": ("WEBP", {"lossless": True}),
}
MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


def _encoded(image, fmt="PNG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def _data_url(data: bytes, fmt="PNG") -> str:
    return f"data:{MIME[fmt]};base64," + base64.b64encode(data).decode()


def _smooth_image():
    """A photo-like image (gradients plus noise): what lossy codecs are for."""
    y, x = np.mgrid[0:45, 0:61]
    rgb = np.stack([(x * 4) % 256, (y * 5) % 256, ((x + y) * 3) % 256], -1).astype(np.float64)
    noise = np.random.RandomState(0).normal(0, 20, rgb.shape)
    return Image.fromarray(np.clip(rgb + noise, 0, 255).astype(np.uint8))


@pytest.fixture(scope="module")
def answers(browser_ready, webgpu_vision, photo, tmp_path_factory):
    from mlcx.web.browser import browser_page, send_chat, wait_ready
    from mlcx.web.server import serve_in_background, url_of

    png = tmp_path_factory.mktemp("picked") / "photo.png"
    photo.save(png)
    server = serve_in_background(webgpu_vision)
    try:
        with browser_page(url_of(server)) as page:
            wait_ready(page)
            assert page.is_visible("#image-pick")  # the model takes images
            page.set_input_files("#image", png)
            picked, _ = send_chat(page, QUESTION, MAX_TOKENS)
            smooth = _smooth_image()
            files = {name: _encoded(smooth, fmt, **kw) for name, (fmt, kw) in DECODE.items()}
            urls = [_data_url(files[name], fmt) for name, (fmt, _) in DECODE.items()]
            args = {
                "QUESTION": QUESTION,
                "IMAGE_URL": _data_url(_encoded(photo)),
                "MAX_TOKENS": MAX_TOKENS,
                "DECODE_URLS": urls,
            }
            out = page.evaluate(SCENARIO.read_text(), args)
            out["picked"] = picked
            out["thumbnails"] = page.locator(".msg.user img").count()
            out["files"] = files
            return out
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def cpu(vision_artifact):
    return LLM(str(vision_artifact), EngineConfig(kv_blocks=64))


def _greedy(llm, ids, images, max_tokens=MAX_TOKENS, ignore_eos=True):
    params = SamplingParams.greedy(max_tokens=max_tokens, ignore_eos=ignore_eos)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    return completion.token_ids


@pytest.fixture(scope="module")
def image_prompt(cpu, photo):
    parts = [{"type": "text", "text": QUESTION}, {"type": "image", "image": photo}]
    return cpu.chat_inputs([{"role": "user", "content": parts}])


def test_the_image_answer_equals_the_cpu_artifact_s_tokens(answers, cpu, image_prompt):
    ids, images = image_prompt
    answer = answers["image"]
    assert answer["prompt_token_ids"] == ids  # the image's tokens laid out as Python lays them
    want = _greedy(cpu, ids, images)
    assert answer["choices"][0]["token_ids"] == want
    assert len(set(want)) > 4  # not a degenerate repeat


def test_the_picked_image_answers_as_the_cpu_artifact(answers, cpu, image_prompt):
    ids, images = image_prompt
    picked = answers["picked"]
    assert picked["promptIds"] == ids and answers["thumbnails"] == 1
    assert picked["tokenIds"] == _greedy(cpu, ids, images, ignore_eos=False)


def test_the_same_image_next_turn_is_not_encoded_again(answers):
    assert answers["encodedBefore"] == answers["encodedAfter"] == 1  # the picker's, only
    cached = answers["image"]["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= 16  # the page holding the image's tokens


def test_a_text_prompt_still_answers_as_the_cpu_artifact(answers, cpu):
    ids, _ = cpu.chat_inputs([{"role": "user", "content": QUESTION}])
    assert answers["text"]["choices"][0]["token_ids"] == _greedy(cpu, ids, [], 4)


def test_a_bad_image_is_refused_naming_its_part(answers):
    bad = answers["bad"]
    assert bad["name"] == "InvalidRequestError" and bad["param"] == "messages.0.content.0"
    assert "cannot be decoded" in bad["message"]


def test_the_browser_decodes_jpeg_and_webp_as_pillow_does(answers):
    for (name, data), got in zip(answers["files"].items(), answers["decoded"], strict=True):
        want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        pixels = np.frombuffer(base64.b64decode(got["rgb"]), np.uint8)
        assert (got["height"], got["width"]) == want.shape[:2], name
        assert np.array_equal(pixels.reshape(want.shape), want), name
