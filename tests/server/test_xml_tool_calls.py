"""Qwen3.5's XML tool calls (mlcx/runtime/openai_api/xml_calls.py): told from the chat template,
read whole or in any pieces to the same calls, each value as its parameter's schema types it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlcx.runtime.openai_api.call_syntax import SYNTAXES, detect_syntax
from mlcx.runtime.openai_api.tool_calls import ToolReply

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
PARAMETERS = {
    "search": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "exact": {"type": "boolean"},
            "filters": {"type": "object"},
            "score": {"type": ["number", "null"]},
        },
    }
}
TWO_CALLS = (
    '<tool_call>\n<function=search>\n<parameter=query>\nline one\n  line "two"\n</parameter>\n'
    "<parameter=limit>\n5\n</parameter>\n<parameter=exact>\nFalse\n</parameter>\n"
    '<parameter=filters>\n{"lang": "en"}\n</parameter>\n<parameter=score>\n2.5\n</parameter>\n'
    "<parameter=untyped>\n[1, 2]\n</parameter>\n</function>\n</tool_call>\n"
    "<tool_call>\n<function=now>\n</function>\n</tool_call>"
)
FIRST = {
    "query": 'line one\n  line "two"',
    "limit": 5,
    "exact": False,
    "filters": {"lang": "en"},
    "score": 2.5,
    "untyped": [1, 2],
}


def _reply(constrained: bool = False) -> ToolReply:
    return ToolReply(constrained, scanner=SYNTAXES["xml"](PARAMETERS))


@pytest.mark.parametrize(
    ("template", "syntax"),
    [("qwen3_5.jinja", "xml"), ("qwen3.jinja", "json"), ("gpt_oss.jinja", "json"), (None, "json")],
)
def test_the_template_tells_the_syntax(template, syntax):
    source = (TEMPLATES / template).read_text() if template else None
    assert detect_syntax(source) == syntax


def test_calls_read_whole():
    message = _reply().message(TWO_CALLS)
    assert message["content"] is None
    first, second = message["tool_calls"]
    assert first["function"]["name"] == "search"
    assert json.loads(first["function"]["arguments"]) == FIRST
    assert (second["function"]["name"], second["function"]["arguments"]) == ("now", "{}")


@pytest.mark.parametrize("size", [1, 2, 5, 13, 40])
def test_any_pieces_give_the_same_calls(size):
    reply, deltas = _reply(), []
    for i in range(0, len(TWO_CALLS), size):
        deltas += reply.feed(TWO_CALLS[i : i + size])
    deltas += reply.finish()
    entries = [d["tool_calls"][0] for d in deltas]
    assert all("tool_calls" in d for d in deltas)
    assert [e["function"]["name"] for e in entries if "id" in e] == ["search", "now"]
    first = "".join(e["function"]["arguments"] for e in entries if e["index"] == 0)
    assert json.loads(first) == FIRST
    assert len([e for e in entries if e["index"] == 0]) == 1 + len(FIRST) + 1  # head, each, }


def test_text_without_a_block_is_content_and_a_constrained_reply_is_json():
    assert _reply().message("It is <function=sunny> today") == {
        "content": "It is <function=sunny> today"
    }
    forced = '{"name": "now", "arguments": {}}'
    [call] = _reply(constrained=True).message(forced)["tool_calls"]
    assert (call["function"]["name"], call["function"]["arguments"]) == ("now", "{}")
