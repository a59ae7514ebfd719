"""`<think>...</think>` replies (Qwen3, DeepSeek-R1 and its distills, QwQ): the reasoning
between the tags, the content after the closing one.

The reply may begin inside the reasoning: templates that open `<think>` in the generation
prompt (DeepSeek-R1's, Qwen3's thinking-only models) leave the model to write only the
closing tag, so the parser starts there when the prompt's tail holds an unclosed `<think>`.
A reply that does not begin with `<think>` (after whitespace) is all content, and so is
anything after the first `</think>`. The whitespace around the tags (the blank lines the
templates put there, and strip again when they render a past turn) is dropped.

Text that may be the start of a tag is held back until the next delta settles it.
"""

from __future__ import annotations

from mlcx.runtime.text.reasoning.events import Content, Reasoning, ReplyEvent
from mlcx.runtime.text.stop import longest_partial_suffix

OPEN, CLOSE = "<think>", "</think>"


def opens_reasoning(prompt_tail: str) -> bool:
    """Whether the prompt leaves a `<think>` open for the reply to continue."""
    return prompt_tail.rfind(OPEN) > prompt_tail.rfind(CLOSE)


class ThinkParser:
    def __init__(self, prompt_tail: str = "") -> None:
        self._state = "reasoning_start" if opens_reasoning(prompt_tail) else "start"
        self._held = ""

    def feed(self, text: str) -> list[ReplyEvent]:
        self._held += text
        events: list[ReplyEvent] = []
        while self._held:
            state = self._state
            event = STATES[state](self)
            if event is not None:
                events.append(event)
            if self._state == state:  # waiting for more text
                break
        return events

    def finish(self) -> list[ReplyEvent]:
        held, self._held = self._held, ""
        if self._state == "start" and held:
            return [Content(held)]
        if self._state == "reasoning" and held.rstrip():
            return [Reasoning(held.rstrip())]
        return []

    def _start(self) -> None:
        head = self._held.lstrip()
        if head.startswith(OPEN):
            self._held, self._state = head[len(OPEN) :], "reasoning_start"
        elif not OPEN.startswith(head):
            self._state = "content"

    def _reasoning_start(self) -> None:
        self._held = self._held.lstrip()
        if self._held:
            self._state = "reasoning"

    def _reasoning(self) -> Reasoning | None:
        end = self._held.find(CLOSE)
        if end >= 0:
            text, self._held = self._held[:end].rstrip(), self._held[end + len(CLOSE) :]
            self._state = "content_start"
            return Reasoning(text) if text else None
        keep = longest_partial_suffix(self._held, (CLOSE,))
        body = self._held[: len(self._held) - keep]
        text = body.rstrip()  # trailing whitespace waits: it is dropped if the tag follows
        self._held = self._held[len(text) :]
        return Reasoning(text) if text else None

    def _content_start(self) -> None:
        self._held = self._held.lstrip()
        if self._held:
            self._state = "content"

    def _content(self) -> Content:
        held, self._held = self._held, ""
        return Content(held)


STATES = {
    "start": ThinkParser._start,
    "reasoning_start": ThinkParser._reasoning_start,
    "reasoning": ThinkParser._reasoning,
    "content_start": ThinkParser._content_start,
    "content": ThinkParser._content,
}
