"""Without the `openai` package the engines return plain dataclasses with openai's fields and
the same values: built from the same bodies, they read alike, field by field; a Python where
`import openai` fails gets them from MLCEngine."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from mlcx import MLCEngine
from mlcx.runtime.api import plain_types

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "temperature": 0}


def _same(plain, typed) -> None:
    """Every dataclass field reads as the openai object's attribute of that name (the ids and
    timestamps of two requests aside)."""
    for f in dataclasses.fields(plain):
        if f.name in ("id", "created"):
            continue
        ours, theirs = getattr(plain, f.name), getattr(typed, f.name, None)
        if isinstance(ours, list) and ours and dataclasses.is_dataclass(ours[0]):
            assert len(ours) == len(theirs)
            for a, b in zip(ours, theirs, strict=True):
                _same(a, b)
        elif dataclasses.is_dataclass(ours):
            _same(ours, theirs)
        else:
            assert ours == theirs, f.name


@pytest.fixture(scope="module")
def engines(greedy_artifact):
    with (
        MLCEngine(str(greedy_artifact)) as typed,
        MLCEngine(str(greedy_artifact), openai_types=False) as plain,
    ):
        yield typed, plain


def test_chat_and_chunks_read_alike(engines):
    typed, plain = engines
    request = {**CHAT, "logprobs": True, "top_logprobs": 2}
    ours = plain.chat.completions.create(**request)
    assert isinstance(ours, plain_types.ChatCompletion)
    _same(ours, typed.chat.completions.create(**request))
    chunks = list(plain.chat.completions.create(**request, stream=True))
    assert all(isinstance(c, plain_types.ChatCompletionChunk) for c in chunks)
    for a, b in zip(chunks, typed.chat.completions.create(**request, stream=True), strict=True):
        _same(a, b)


def test_completions_and_models_read_alike(engines):
    typed, plain = engines
    request = {"prompt": "hello", "max_tokens": 4, "logprobs": 2, "temperature": 0}
    _same(plain.completions.create(**request), typed.completions.create(**request))
    ours, theirs = plain.models.list(), typed.models.list()
    assert [m.id for m in ours] == [m.id for m in theirs]
    _same(ours.data[0], theirs.data[0])


def test_without_openai_installed(greedy_artifact):
    code = f"""
import sys
from tests.support.without_modules import _Blocker
sys.meta_path.insert(0, _Blocker({{"openai"}}))
from mlcx import MLCEngine
with MLCEngine({str(greedy_artifact)!r}) as engine:
    reply = engine.chat.completions.create(**{CHAT!r})
print(type(reply).__module__, type(reply).__name__, reply.choices[0].message.role)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["mlcx.runtime.api.plain_types", "ChatCompletion", "assistant"]
