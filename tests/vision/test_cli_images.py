"""`mlcx generate --image FILE` and `/image FILE` in `mlcx chat` (the real command in a
subprocess) answer as the Python API does with the same image; a bad file is named."""

from __future__ import annotations

import json
import unicodedata

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from tests.support.cli import run_mlcx


@pytest.fixture(scope="module")
def files(tmp_path_factory, photo):
    folder = tmp_path_factory.mktemp("images")
    photo.save(folder / "photo.png")
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    return folder


def _expected(artifact, photo, text: str) -> str:
    llm = LLM(str(artifact), EngineConfig(kv_blocks=64))
    parts = [{"type": "image", "image": photo}, {"type": "text", "text": text}]
    ids, images = llm.chat_inputs([{"role": "user", "content": parts}])
    params = llm.default_params(max_tokens=8, temperature=0.0)
    return llm.generate([ids], params, images=[images])[0].outputs[0].text


def test_generate_with_an_image(vision_artifact, files, photo):
    args = ["generate", str(vision_artifact), "-p", "what is this?", "--max-tokens", "8"]
    result = run_mlcx(*args, "--temperature", "0", "--image", str(files / "photo.png"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == _expected(vision_artifact, photo, "what is this?")


def test_chat_image_command(vision_artifact, files, photo):
    lines = [f"/image {files / 'broken.jpg'}", f"/image {files / 'photo.png'}", "hi", "/exit"]
    args = ["chat", str(vision_artifact), "--max-tokens", "8", "--temperature", "0"]
    result = run_mlcx(*args, stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    assert f"{files / 'broken.jpg'}: not a readable" in result.stdout
    assert "photo.png goes with your next message" in result.stdout
    # the terminal chat prints through rich, which drops control characters (a random model's
    # reply can hold a \x0b): the reply as a terminal shows it
    shown = "".join(c for c in _expected(vision_artifact, photo, "hi") if not _control(c))
    assert shown in result.stdout


def _control(c: str) -> bool:
    return c != "\n" and unicodedata.category(c) == "Cc"
