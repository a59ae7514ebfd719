"""One choice's reply as OpenAI chat deltas and message fields, the way vLLM and
llama-server return a reasoning model's: `reasoning_content` (the reasoning: `<think>` text,
harmony's analysis channel), `content` (the answer) and `tool_calls`.

The reply's text goes through the reply format's parser (mlcx.runtime.text.reasoning).
Calls the format marks (harmony's `functions.` messages) become tool calls as they are;
content goes through the tool-call parser (tool_calls.ToolReply, in the syntax the model
writes: call_syntax.py) when the request has tools, so a `<think>` model's `<tool_call>`
blocks after its reasoning are calls too.
Both kinds of call join one list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlcx.runtime.openai_api.call_syntax import SYNTAXES
from mlcx.runtime.openai_api.tool_calls import CallList, ToolReply
from mlcx.runtime.openai_api.tools import ToolPlan
from mlcx.runtime.text.reasoning import (
    Content,
    Reasoning,
    ReplyEvent,
    ReplyParser,
    ToolCallArguments,
    ToolCallStart,
)

Part = dict[str, Any]
TEXT_FIELDS = ("content", "reasoning_content")


class ChoiceReply:
    def __init__(self, parser: ReplyParser, tools: ToolPlan | None = None, syntax: str = "json"):
        """`tools`: the request's, when its replies are parsed for calls in the text;
        `syntax`: the one the model writes calls in (call_syntax.py)."""
        self._parser = parser
        self._calls = CallList()
        self._text_calls = None
        if tools is not None:
            scanner = SYNTAXES[syntax](tools.parameters)
            self._text_calls = ToolReply(tools.constraint is not None, self._calls, scanner)
        self._indices: dict[int, int] = {}  # the format's call index -> its index in _calls

    @property
    def called(self) -> bool:
        return bool(self._calls.calls)

    def feed(self, text: str) -> list[Part]:
        """The OpenAI deltas of the next piece of text."""
        return self._parts(self._parser.feed(text))

    def finish(self) -> list[Part]:
        """The deltas of what was held back, at the end of the reply."""
        parts = self._parts(self._parser.finish())
        if self._text_calls is not None:
            parts += self._text_calls.finish()
        return _joined(parts)

    def message(self, text: str) -> Part:
        """The whole reply as the fields of a chat message (content null when it holds
        calls and nothing else; reasoning_content only where there is some)."""
        parts = self.feed(text) + self.finish()
        content, reasoning = ("".join(p.get(k, "") for p in parts) for k in TEXT_FIELDS)
        message: Part = {"content": content if content or not self.called else None}
        if reasoning:
            message["reasoning_content"] = reasoning
        if self.called:
            message["tool_calls"] = self._calls.calls
        return message

    def _parts(self, events: list[ReplyEvent]) -> list[Part]:
        return _joined([part for event in events for part in EVENT_PARTS[type(event)](self, event)])

    def _reasoning(self, event: Reasoning) -> list[Part]:
        return [{"reasoning_content": event.text}]

    def _content(self, event: Content) -> list[Part]:
        if self._text_calls is None:
            return [{"content": event.text}]
        return self._text_calls.feed(event.text)

    def _call(self, event: ToolCallStart) -> list[Part]:
        self._indices[event.index] = len(self._calls.calls)
        return [{"tool_calls": [self._calls.start(event.name)]}]

    def _arguments(self, event: ToolCallArguments) -> list[Part]:
        return [{"tool_calls": [self._calls.extend(self._indices[event.index], event.text)]}]


EVENT_PARTS: dict[type, Callable[[ChoiceReply, Any], list[Part]]] = {
    Reasoning: ChoiceReply._reasoning,
    Content: ChoiceReply._content,
    ToolCallStart: ChoiceReply._call,
    ToolCallArguments: ChoiceReply._arguments,
}


def _joined(parts: list[Part]) -> list[Part]:
    """Adjacent text deltas of one field as one."""
    out: list[Part] = []
    for part in parts:
        key = next(iter(part)) if len(part) == 1 else None
        if key in TEXT_FIELDS and out and list(out[-1]) == [key]:
            out[-1] = {key: out[-1][key] + part[key]}
        else:
            out.append(part)
    return out
