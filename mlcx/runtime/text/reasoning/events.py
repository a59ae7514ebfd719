"""What a reply parser reports as the text streams in: reasoning, content, and tool calls (a
call's start with its name, then its arguments' JSON text in pieces).

A call's `index` counts the calls of one reply from 0; ids are the front door's to give (the
server's are OpenAI's `call_...`), so that the same text always parses to the same events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Reasoning:
    text: str


@dataclass(frozen=True)
class Content:
    text: str


@dataclass(frozen=True)
class ToolCallStart:
    index: int
    name: str


@dataclass(frozen=True)
class ToolCallArguments:
    index: int
    text: str


ReplyEvent = Reasoning | Content | ToolCallStart | ToolCallArguments

KINDS: dict[type, str] = {
    Reasoning: "reasoning",
    Content: "content",
    ToolCallStart: "call",
    ToolCallArguments: "arguments",
}


def merged(events: Iterable[ReplyEvent]) -> list[ReplyEvent]:
    """Adjacent text events of one kind (and call) joined, empty ones dropped: the same for
    any split of the text into deltas."""
    out: list[ReplyEvent] = []
    for event in events:
        if isinstance(event, ToolCallStart):
            out.append(event)
        elif event.text:
            last = out[-1] if out else None
            if _same_stream(last, event):
                out[-1] = replace(event, text=last.text + event.text)  # type: ignore[union-attr]
            else:
                out.append(event)
    return out


def _same_stream(last: ReplyEvent | None, event: ReplyEvent) -> bool:
    if type(last) is not type(event):
        return False
    return getattr(last, "index", None) == getattr(event, "index", None)


def event_dict(event: ReplyEvent) -> dict[str, Any]:
    """An event as JSON (the shared test vectors use this shape): {"type": kind, ...fields}."""
    return {"type": KINDS[type(event)], **event.__dict__}
