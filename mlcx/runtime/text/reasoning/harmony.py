"""gpt-oss's harmony format: a reply is a run of messages, each

    <|start|>assistant<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json]<|message|>BODY<END>

(the recipient may also follow the role), END being `<|end|>` (more messages follow),
`<|call|>` (a tool call ends the turn) or `<|return|>` (the final answer ends it). The
generation prompt writes the first `<|start|>assistant` itself. A message to
`functions.NAME` is a tool call whose body is the arguments' JSON; otherwise the `analysis`
channel is reasoning and `final` (and a `commentary` preamble to the user) is content. A
recipient that is not `functions.` (gpt-oss's built-in browser and python tools) is the
model's own business: reasoning.

The markers are special tokens, so the text must be detokenized with them kept. `<|call|>`
and `<|return|>` are stop tokens and usually never reach the text; the end of the stream
ends the last message. A reply that does not start the way harmony does (a constrained
one, written as plain JSON) is all content.
"""

from __future__ import annotations

import re

from mlcx.runtime.text.reasoning.events import (
    Content,
    Reasoning,
    ReplyEvent,
    ToolCallArguments,
    ToolCallStart,
)
from mlcx.runtime.text.stop import longest_partial_suffix

START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
END, RETURN, CALL, CONSTRAIN = "<|end|>", "<|return|>", "<|call|>", "<|constrain|>"
MARKERS = (START, CHANNEL, MESSAGE, END, RETURN, CALL, CONSTRAIN)
BODY_ENDS = (END, CALL, RETURN, START)  # a new <|start|> ends an unterminated message too
RECIPIENT = re.compile(r"to=([^\s<]+)")
CHANNEL_NAME = re.compile(re.escape(CHANNEL) + r"\s*([^\s<]+)")
FUNCTIONS = "functions."
# how a header may continue after its role: a marker, the recipient, a content type
HEADER_STARTS = ("<|", "to=", " ")


class HarmonyParser:
    def __init__(self, prompt_tail: str = "") -> None:
        self._state = "outside"
        self._held = ""
        self._header = ""  # the header read so far, role included
        self._kind: str = "content"  # of the message being read: reasoning, content, call
        self._calls = 0
        self._started = False  # the output has opened a message of its own
        self._output_from: int | None = None
        start = prompt_tail.rfind(START)
        if start >= 0:
            self.feed(prompt_tail[start:])  # the prompt's own last message (header): no events
        # where the output's part of a header the prompt began starts (None: it began none)
        self._output_from = len(self._header) if self._state == "header" else None
        self._started = False

    def feed(self, text: str) -> list[ReplyEvent]:
        self._held += text
        events: list[ReplyEvent] = []
        while self._held:
            state = self._state
            events += STATES[state](self)
            if self._state == state:
                break
        return events

    def finish(self) -> list[ReplyEvent]:
        held, self._held = self._held, ""
        if self._state == "body":
            return self._body_events(held)
        if self._state == "header" and self._prompt_began_header:
            output = (self._header + held)[self._output_from :]
            return [Content(output)] if output else []
        if self._state in ("outside", "plain") and held.strip():
            return [Content(held)]
        return []

    @property
    def _prompt_began_header(self) -> bool:
        """The header being read is the one the prompt began, and no message is open yet."""
        return self._output_from is not None and not self._started

    def _outside(self) -> list[ReplyEvent]:
        """Between messages: up to the next `<|start|>` (or a `<|channel|>` whose header left
        out the role); stray text there is content."""
        found = [(self._held.find(m), m) for m in (START, CHANNEL) if m in self._held]
        if not found:
            keep = longest_partial_suffix(self._held, (START, CHANNEL))
            stray = self._held[: len(self._held) - keep]
            self._held = self._held[len(stray) :]
            return [Content(stray)] if stray.strip() else []
        at, marker = min(found)
        stray = self._held[:at]
        self._header = "" if marker == START else CHANNEL
        self._held, self._state = self._held[at + len(marker) :], "header"
        return [Content(stray)] if stray.strip() else []

    def _read_header(self) -> list[ReplyEvent]:
        self._header += self._held
        self._held = ""
        at = self._header.find(MESSAGE)
        if self._prompt_began_header:
            output = self._header[self._output_from : at if at >= 0 else None]
            if not _plausible(output):
                self._state, self._held = "plain", self._header[self._output_from :]
                return []
        if at < 0:
            return []
        header, self._held = self._header[:at], self._header[at + len(MESSAGE) :]
        self._state, self._started = "body", True
        return self._open(header)

    def _open(self, header: str) -> list[ReplyEvent]:
        """The kind of the message `header` starts, and a call's start."""
        recipient = RECIPIENT.search(header)
        channel = CHANNEL_NAME.search(header)
        name = recipient.group(1) if recipient else None
        if name is not None and name.startswith(FUNCTIONS) and len(name) > len(FUNCTIONS):
            self._kind, self._calls = "call", self._calls + 1
            return [ToolCallStart(self._calls - 1, name[len(FUNCTIONS) :])]
        analysis = channel is not None and channel.group(1) == "analysis"
        self._kind = "reasoning" if analysis or name is not None else "content"
        return []

    def _body(self) -> list[ReplyEvent]:
        ends = [(self._held.find(m), m) for m in BODY_ENDS if m in self._held]
        if not ends:
            keep = longest_partial_suffix(self._held, BODY_ENDS)
            text = self._held[: len(self._held) - keep]
            self._held = self._held[len(text) :]
            return self._body_events(text)
        at, marker = min(ends)
        text, self._held = self._held[:at], self._held[at + len(marker) :]
        self._header = ""
        self._state = {RETURN: "done", START: "header"}.get(marker, "outside")
        return self._body_events(text)

    def _body_events(self, text: str) -> list[ReplyEvent]:
        if not text:
            return []
        if self._kind == "call":
            return [ToolCallArguments(self._calls - 1, text)]
        return [Reasoning(text) if self._kind == "reasoning" else Content(text)]

    def _plain(self) -> list[ReplyEvent]:
        held, self._held = self._held, ""
        return [Content(held)]

    def _done(self) -> list[ReplyEvent]:
        self._held = ""
        return []


def _plausible(output: str) -> bool:
    """Whether the output's part of a header whose role the prompt wrote can still be one:
    it goes on with a marker, a recipient or a space, and holds no line break."""
    if "\n" in output:
        return False
    return not output or any(s.startswith(output) or output.startswith(s) for s in HEADER_STARTS)


STATES = {
    "outside": HarmonyParser._outside,
    "header": HarmonyParser._read_header,
    "body": HarmonyParser._body,
    "plain": HarmonyParser._plain,
    "done": HarmonyParser._done,
}
