"""The Python API and `mlcx chat` on models that reason (a tiny model whose tokenizer and
chat template are gpt-oss's or Qwen3's, its sampled tokens scripted replies): completions
carry `reasoning_content`, `content` and `tool_calls` beside the raw `text`; a chat session
keeps the reasoning for the template; the terminal shows it dimmed; MLCEngine's replies and
chunks carry reasoning_content as the server's do."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from mlcx.cli.chat_cmd import _reply
from mlcx.runtime.api.chat_session import ChatSession
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.api.mlc_engine import MLCEngine
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.reasoning import Content, Reasoning, ToolCall
from tests.support.reasoning_models import harmony_assets, think_assets, with_assets
from tests.support.scripted_sampler import ScriptedSampler

MESSAGES = [{"role": "user", "content": "Weather in Tokyo?"}]
PARAMS = SamplingParams.greedy(max_tokens=80)
ANSWER = (
    "<|channel|>analysis<|message|>The user wants the weather.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>It is sunny."
)
CALL = (
    "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"location": "Tokyo"}'
)
THINK = "<think>\nThe user greets me.\n</think>\n\nHello!"


@pytest.fixture(scope="module")
def harmony_artifact(compiled, tmp_path_factory):
    return with_assets(compiled(), harmony_assets(), tmp_path_factory.mktemp("h") / "a")


@pytest.fixture(scope="module")
def think_artifact(compiled, tmp_path_factory):
    return with_assets(compiled(), think_assets(), tmp_path_factory.mktemp("t") / "a")


def scripted(llm: LLM, text: str, stop: str) -> LLM:
    ScriptedSampler(llm.engine).say(llm.tokenizer, text, stop)
    return llm


def test_completions_carry_the_split_reply(harmony_artifact):
    llm = scripted(LLM(harmony_artifact), ANSWER, "<|return|>")
    [c] = llm.generate([llm.chat_prompt(MESSAGES)], PARAMS)[0].outputs
    assert c.text == ANSWER  # as the model wrote it, markers and all
    assert (c.reasoning_content, c.content) == ("The user wants the weather.", "It is sunny.")
    assert c.tool_calls == [] and c.finish_reason == "stop"


def test_completions_carry_harmony_tool_calls(harmony_artifact):
    llm = scripted(LLM(harmony_artifact), CALL, "<|call|>")
    [c] = llm.generate([llm.chat_prompt(MESSAGES)], PARAMS)[0].outputs
    assert c.tool_calls == [ToolCall("get_weather", '{"location": "Tokyo"}')]
    assert c.content == "" and c.reasoning_content is None


def test_reasoning_format_none_leaves_the_text_whole(harmony_artifact):
    llm = scripted(LLM(harmony_artifact, reasoning_format="none"), ANSWER, "<|return|>")
    [c] = llm.generate([llm.chat_prompt(MESSAGES)], PARAMS)[0].outputs
    assert c.content == c.text == ANSWER and c.reasoning_content is None
    with pytest.raises(ValueError, match="reasoning_format must be one of"):
        LLM(harmony_artifact, reasoning_format="r1")


def test_chat_session_streams_events_and_keeps_the_reasoning(think_artifact):
    llm = scripted(LLM(think_artifact), THINK, "<|im_end|>")
    session = ChatSession(llm, PARAMS)
    events = list(session.send("Hi"))
    assert {type(e) for e in events} == {Reasoning, Content}
    assert "".join(e.text for e in events if isinstance(e, Reasoning)) == "The user greets me."
    assert "".join(e.text for e in events if isinstance(e, Content)) == "Hello!"
    assert session.messages[-1] == {
        "role": "assistant",
        "content": "Hello!",
        "reasoning_content": "The user greets me.",
    }


def test_chat_shows_reasoning_dimmed(think_artifact):
    llm = scripted(LLM(think_artifact), THINK, "<|im_end|>")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", highlight=False)
    _reply(ChatSession(llm, PARAMS), "Hi", console)
    shown = out.getvalue()
    dimmed = re.findall(r"\x1b\[2m(.*?)\x1b\[0m", shown)
    assert "".join(dimmed) == "The user greets me."
    assert re.sub(r"\x1b\[2m.*?\x1b\[0m", "", shown) == "\nHello!"  # content as it is


def test_mlc_engine_returns_the_split_reply(harmony_artifact):
    engine = Engine(harmony_artifact)
    ScriptedSampler(engine).say(engine.tokenizer, ANSWER, "<|return|>")
    with MLCEngine(engine) as mlc:
        reply = mlc.chat.completions.create(messages=MESSAGES, max_tokens=80)
        message = reply.choices[0].message
        assert (message.reasoning_content, message.content) == (
            "The user wants the weather.",
            "It is sunny.",
        )
        chunks = mlc.chat.completions.create(messages=MESSAGES, max_tokens=80, stream=True)
        deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert "".join(getattr(d, "reasoning_content", None) or "" for d in deltas) == (
        "The user wants the weather."
    )
    assert "".join(d.content or "" for d in deltas) == "It is sunny."
