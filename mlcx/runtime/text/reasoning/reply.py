"""A whole reply as its parser splits it: reasoning, content and tool calls, built up from
the text deltas of a stream (what the Python API's completions and `mlcx chat` keep)."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.runtime.text.reasoning.events import (
    Content,
    Reasoning,
    ReplyEvent,
    ToolCallArguments,
    ToolCallStart,
)
from mlcx.runtime.text.reasoning.formats import ReplyParser


@dataclass
class ToolCall:
    name: str
    arguments: str = ""  # JSON text, as it streamed


class ParsedReply:
    def __init__(self, parser: ReplyParser) -> None:
        self._parser = parser
        self.reasoning = ""
        self.content = ""
        self.tool_calls: list[ToolCall] = []

    def feed(self, text: str) -> list[ReplyEvent]:
        """The events of the next text delta, also added to the reply."""
        return self._add(self._parser.feed(text))

    def finish(self) -> list[ReplyEvent]:
        """The events of the text the parser held back, at the end of the reply."""
        return self._add(self._parser.finish())

    def _add(self, events: list[ReplyEvent]) -> list[ReplyEvent]:
        for event in events:
            if isinstance(event, Reasoning):
                self.reasoning += event.text
            elif isinstance(event, Content):
                self.content += event.text
            elif isinstance(event, ToolCallStart):
                self.tool_calls.append(ToolCall(event.name))
            elif isinstance(event, ToolCallArguments):
                self.tool_calls[event.index].arguments += event.text
        return events
