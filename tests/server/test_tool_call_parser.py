"""Tool calls out of reply text: the same calls however the text is split into pieces."""

from __future__ import annotations

import json

import pytest

from mlcx.runtime.openai_api.tool_calls import ToolReply

ONE = '{"name": "f", "arguments": {"s": "a\\"}]{,", "n": [1, {"b": null}]}}'
TWO = '[{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": {}}]'
BLOCKS = '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>'  # noqa: E501


def streamed(text: str, constrained: bool, size: int) -> tuple[str, list[dict]]:
    """(content, calls) reassembled from the deltas of `text` fed `size` characters at a time."""
    reply, parts = ToolReply(constrained), []
    for start in range(0, len(text), size):
        parts += reply.feed(text[start : start + size])
    parts += reply.finish()
    content, calls = "", []
    for part in parts:
        content += part.get("content", "")
        for entry in part.get("tool_calls", []):
            if "id" in entry:
                assert entry["index"] == len(calls) and entry["function"]["arguments"] == ""
                calls.append({"name": entry["function"]["name"], "arguments": ""})
            else:
                assert set(entry) == {"index", "function"} and set(entry["function"]) == {
                    "arguments"
                }
                calls[entry["index"]]["arguments"] += entry["function"]["arguments"]
    return content, calls


@pytest.mark.parametrize("size", [1, 2, 7, 1000])
@pytest.mark.parametrize(
    ("text", "constrained", "names"),
    [(ONE, True, ["f"]), (TWO, True, ["f", "g"]), (BLOCKS, False, ["f", "g"])],
)
def test_calls_are_found_however_the_text_is_split(text, constrained, names, size):
    content, calls = streamed(text, constrained, size)
    assert content == "" and [c["name"] for c in calls] == names
    message = ToolReply(constrained).message(text)
    assert message["content"] is None
    whole = [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
    assert whole == [(c["name"], c["arguments"]) for c in calls]
    for call in calls:
        json.loads(call["arguments"])


@pytest.mark.parametrize("size", [1, 3, 1000])
@pytest.mark.parametrize("text", ["Hello there", "  <tool", "<tool_call> not json", "<b>hi</b>"])
def test_text_without_calls_is_content(text, size):
    assert streamed(text, False, size) == (text, [])
    assert ToolReply(False).message(text) == {"content": text}


def test_an_unconstrained_reply_is_content_unless_it_starts_with_a_call():
    text = f"Sure. {BLOCKS}"
    assert ToolReply(False).message(text) == {"content": text}


def test_call_ids_are_unique():
    calls = ToolReply(True).message(TWO)["tool_calls"]
    assert calls[0]["id"] != calls[1]["id"] and all(c["id"].startswith("call_") for c in calls)
