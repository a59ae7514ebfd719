"""Images through `mlcx serve` with the real openai client: image_url parts as data: URLs
(PNG, JPEG, WebP) give the same answer as the Python API; bad images (corrupt, empty, too
large, wrong type, not base64), remote URLs (unless allowed) and images sent to a text-only
model are a 400 in OpenAI's error envelope naming the part."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import openai
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from mlcx.server.config import ServerConfig
from tests.server.conftest import serving
from tests.vision.conftest import random_image

PART = "messages.0.content.1"
MODEL = "served"
ENGINE = EngineConfig(kv_blocks=64)


def _data_url(image, fmt="PNG", mime="png") -> str:
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return f"data:image/{mime};base64," + base64.b64encode(buffer.getvalue()).decode()


def _messages(url: str) -> list[dict]:
    parts = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    return [{"role": "user", "content": parts}]


def _ask(client, url: str, **kw):
    return client.chat.completions.create(
        model=MODEL,
        messages=_messages(url),
        max_tokens=8,
        temperature=0.0,
        extra_body={"ignore_eos": True},
        **kw,
    )


@pytest.fixture(scope="module")
def served(vision_artifact):
    with serving(
        vision_artifact, ENGINE, ServerConfig(port=0, max_image_bytes=50_000, model_name=MODEL)
    ) as s:
        yield s


def test_openai_client_sends_an_image(served, vision_artifact, photo):
    reply = _ask(served.client(), _data_url(photo))
    llm = LLM(str(vision_artifact), ENGINE)
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "image": photo},
            ],
        }
    ]
    ids, images = llm.chat_inputs(messages)
    params = SamplingParams.greedy(max_tokens=8, ignore_eos=True)
    [want] = llm.generate([ids], params, images=[images])[0].outputs
    assert reply.choices[0].message.content == want.text
    assert reply.usage.prompt_tokens == len(ids)


def test_an_image_request_streams(served, photo):
    stream = _ask(served.client(), _data_url(photo), stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == _ask(served.client(), _data_url(photo)).choices[0].message.content


@pytest.mark.parametrize("fmt,mime", [("JPEG", "jpeg"), ("WEBP", "webp")])
def test_jpeg_and_webp_are_taken(served, photo, fmt, mime):
    assert _ask(served.client(), _data_url(photo, fmt, mime)).choices[0].message.content


def _gif() -> str:
    return _data_url(random_image(3), "GIF", "gif")


def _huge() -> str:
    """A PNG header that claims 20000 x 20000 pixels (a decompression bomb)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode()


BAD = {
    "huge dimensions": _huge,
    "corrupt": lambda: (
        "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nnot").decode()
    ),
    "empty": lambda: "data:image/png;base64,",
    "too large": lambda: _data_url(random_image(4, (200, 200))),
    "wrong type": _gif,
    "not base64": lambda: "data:image/png;base64,@@@@",
    "remote": lambda: "http://127.0.0.1:9/cat.png",
    "other scheme": lambda: "file:///etc/passwd",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_images_are_400_naming_the_part(served, case):
    with pytest.raises(openai.BadRequestError) as caught:
        _ask(served.client(max_retries=0), BAD[case]())
    error = caught.value.body
    assert caught.value.status_code == 400
    assert error["param"] == PART and error["type"] == "invalid_request_error"
    assert PART in error["message"]


def test_a_text_only_model_refuses_images_clearly(compiled, photo):
    config = ServerConfig(port=0, model_name=MODEL)
    with (
        serving(compiled(), EngineConfig(kv_blocks=32), config) as text_only,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        _ask(text_only.client(max_retries=0), _data_url(photo))
    assert caught.value.body["param"] == PART
    assert "text only" in caught.value.body["message"]
