"""Qwen-VL images through the other doors (issue 45): `mlcx serve` with the real openai client
(an image_url data: URL) and `mlcx generate --image FILE` answer with the Python API's tokens
for the same image, at two image sizes, so that the M-RoPE positions of a dynamic-resolution
image reach the engine the same way from every door. The models and their artifacts are
tests/vision/test_qwen_vl.py's (a cache hit there)."""

from __future__ import annotations

import base64
import io
import json

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from mlcx.server.config import ServerConfig
from tests.server.conftest import serving
from tests.support.cli import run_mlcx
from tests.vision.conftest import random_image
from tests.vision.test_qwen_vl import SIZES, artifact, folder, kind  # noqa: F401 (fixtures)

ENGINE = EngineConfig(kv_blocks=64)
QUESTION = "what is this?"
TOKENS = 12


def _python_api(artifact, image, cli: bool = False) -> tuple[list[int], str]:  # noqa: F811
    """(prompt ids, greedy reply) of the Python API for QUESTION about `image`: past EOS as the
    server requests ask, or as the CLI runs (`cli`: the model's defaults, the image first)."""
    llm = LLM(str(artifact), ENGINE)
    parts = [{"type": "text", "text": QUESTION}, {"type": "image", "image": image}]
    parts = parts[::-1] if cli else parts  # `generate --image` sends the image first
    ids, images = llm.chat_inputs([{"role": "user", "content": parts}])
    if cli:
        params = llm.default_params(max_tokens=TOKENS, temperature=0.0)
    else:
        params = SamplingParams.greedy(max_tokens=TOKENS, ignore_eos=True)
    return ids, llm.generate([ids], params, images=[images])[0].outputs[0].text


def _data_url(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@pytest.fixture(scope="module")
def served(artifact):  # noqa: F811
    with serving(artifact, ENGINE, ServerConfig(port=0, model_name="qwen-vl")) as s:
        yield s


@pytest.mark.parametrize("size", SIZES)
def test_the_openai_client_gets_the_python_apis_reply(served, artifact, size):  # noqa: F811
    image = random_image(7, SIZES[size])
    parts = [
        {"type": "text", "text": QUESTION},
        {"type": "image_url", "image_url": {"url": _data_url(image)}},
    ]
    reply = served.client().chat.completions.create(
        model="qwen-vl",
        messages=[{"role": "user", "content": parts}],
        max_tokens=TOKENS,
        temperature=0.0,
        extra_body={"ignore_eos": True},
    )
    ids, want = _python_api(artifact, image)
    assert reply.choices[0].message.content == want
    assert reply.usage.prompt_tokens == len(ids)


@pytest.mark.parametrize("size", SIZES)
def test_generate_with_an_image_file(artifact, tmp_path, size):  # noqa: F811
    image = random_image(8, SIZES[size])
    path = tmp_path / "photo.png"
    image.save(path)
    args = ["generate", str(artifact), "-p", QUESTION, "--max-tokens", str(TOKENS)]
    result = run_mlcx(*args, "--temperature", "0", "--image", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == _python_api(artifact, image, cli=True)[1]
