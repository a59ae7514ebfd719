"""Tool calls out of a reply's text, piece by piece as it streams or all at once.

A call is the JSON object `{"name": "...", "arguments": {...}}` with the name first: what a
constrained reply is (a call or an array of calls, tools.py) and what the generic
format puts in each `<tool_call>` block (mlcx/runtime/text/tool_prompt.py). Text around the calls
(brackets, commas, the block tags) is skipped. An unconstrained reply holds calls only when it
begins with `<tool_call>`; otherwise it is content, and so is a reply in which no call is found.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlcx.runtime.text.tool_prompt import CALL_OPEN

HEAD = re.compile(r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*')


def call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class _ValueEnd:
    """Where a JSON value that arrives in pieces ends (strings and nesting respected)."""

    depth: int = 0
    in_string: bool = False
    escaped: bool = False
    started: bool = False

    def scan(self, text: str) -> tuple[int, bool]:
        """(characters of `text` that belong to the value, whether it ended there)."""
        for i, ch in enumerate(text):
            if self.in_string:
                self._string_char(ch)
                if not self.in_string and self.depth == 0:
                    return i + 1, True
            elif ch == '"':
                self.in_string = self.started = True
            elif ch in "{[":
                self.depth, self.started = self.depth + 1, True
            elif ch in "}]":
                if self.depth == 0:  # a scalar, ended by the call's own closing brace
                    return i, True
                self.depth -= 1
                if self.depth == 0:
                    return i + 1, True
            elif ch == "," and self.depth == 0 and self.started:
                return i, True
            elif not ch.isspace():
                self.started = True
        return len(text), False

    def _string_char(self, ch: str) -> None:
        if self.escaped:
            self.escaped = False
        elif ch == "\\":
            self.escaped = True
        elif ch == '"':
            self.in_string = False


@dataclass
class CallList:
    """A reply's calls in OpenAI's shape, and the tool_calls delta entries that build them:
    a call's start (index, id, type, name, empty arguments), then its arguments in pieces
    (index and arguments only). Calls parsed from the text and calls a reply format marks
    (harmony's) share one list, so their indices never collide."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    def start(self, name: str) -> dict[str, Any]:
        index, id_ = len(self.calls), call_id()
        self.calls.append(
            {"id": id_, "type": "function", "function": {"name": name, "arguments": ""}}
        )
        return {
            "index": index,
            "id": id_,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }

    def extend(self, index: int, part: str) -> dict[str, Any]:
        self.calls[index]["function"]["arguments"] += part
        return {"index": index, "function": {"arguments": part}}


@dataclass
class CallScanner:
    """Finds calls in text fed piece by piece; `feed` returns their tool_calls delta entries
    (CallList's)."""

    out: CallList = field(default_factory=CallList)
    found: int = 0  # calls this scanner found
    _pending: str = ""
    _value: _ValueEnd | None = None

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self.out.calls

    def feed(self, text: str) -> list[dict[str, Any]]:
        self._pending += text
        entries: list[dict[str, Any]] = []
        while True:
            if self._value is None:
                found = HEAD.search(self._pending)
                if found is None:
                    return entries
                entries.append(self.out.start(json.loads(f'"{found.group(1)}"')))
                self.found += 1
                self._pending = self._pending[found.end() :]
                self._value = _ValueEnd()
            taken, ended = self._value.scan(self._pending)
            part, self._pending = self._pending[:taken], self._pending[taken:]
            if not self.calls[-1]["function"]["arguments"]:
                part = part.lstrip()  # the whitespace after "arguments":
            if part:
                entries.append(self.out.extend(len(self.calls) - 1, part))
            if not ended:
                return entries
            self._value = None


class ToolReply:
    """One choice's reply as OpenAI delta dicts: `{"content": ...}` or `{"tool_calls": [...]}`.
    `calls`: the list its calls join (a new one by default); `scanner`: what finds calls in an
    unconstrained reply (this JSON syntax's by default; call_syntax.py). A constrained reply is
    JSON whatever the model's syntax."""

    def __init__(
        self,
        constrained: bool,
        calls: CallList | None = None,
        scanner: Callable[[CallList], Any] = CallScanner,
    ):
        calls = calls if calls is not None else CallList()
        self._scanner = CallScanner(calls) if constrained else scanner(calls)
        self._mode = "calls" if constrained else "undecided"  # then "calls" or "content"
        self._text = ""  # all text so far unless content: it is the content if no call is found

    @property
    def called(self) -> bool:
        """Whether this reply's text held calls."""
        return self._scanner.found > 0

    def feed(self, text: str) -> list[dict[str, Any]]:
        if self._mode == "content":
            return [{"content": text}] if text else []
        self._text += text
        if self._mode == "undecided":
            head = self._text.lstrip()
            if CALL_OPEN.startswith(head):
                return []  # could still become a call
            if not head.startswith(CALL_OPEN):
                self._mode = "content"
                return [{"content": self._text}]
            self._mode, text = "calls", self._text
        return [{"tool_calls": [entry]} for entry in self._scanner.feed(text)]

    def finish(self) -> list[dict[str, Any]]:
        """What is left at the end: the held text as content when it held no call."""
        if self._mode == "content" or self.called or not self._text:
            return []
        return [{"content": self._text}]

    def message(self, text: str) -> dict[str, Any]:
        """The whole reply as a message body (content null when it holds calls)."""
        parts = self.feed(text) + self.finish()
        if self.called:
            return {"content": None, "tool_calls": self._scanner.calls}
        return {"content": "".join(p.get("content", "") for p in parts)}
