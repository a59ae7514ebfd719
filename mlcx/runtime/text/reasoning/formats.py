"""The reply formats, by name, and which one a model speaks.

`auto` (the default everywhere) picks the model's own from its chat template and vocabulary:
harmony where the template writes `<|channel|>` and the vocabulary has harmony's markers,
think where the template mentions `<think>` and the vocabulary has both tags, else none.
`none` leaves the reply as it is: all content, reasoning and markers inline (as
llama-server's `--reasoning-format none`). `deepseek` is llama-server's name for splitting
the reasoning out, taken as `auto`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mlcx.errors import InvalidFieldError
from mlcx.runtime.text.reasoning import harmony, think
from mlcx.runtime.text.reasoning.events import Content, ReplyEvent
from mlcx.runtime.text.tokenizer import Tokenizer

AUTO = "auto"
ALIASES = {"deepseek": AUTO}
PROMPT_TAIL = 16  # prompt tokens a parser reads to know where the reply begins


class ReplyParser(Protocol):
    def feed(self, text: str) -> list[ReplyEvent]: ...
    def finish(self) -> list[ReplyEvent]: ...


class PlainParser:
    """Everything is content."""

    def __init__(self, prompt_tail: str = "") -> None:
        pass

    def feed(self, text: str) -> list[ReplyEvent]:
        return [Content(text)] if text else []

    def finish(self) -> list[ReplyEvent]:
        return []


HasToken = Callable[[str], bool]


@dataclass(frozen=True)
class ReasoningFormat:
    name: str
    parser: Callable[[str], ReplyParser]  # the prompt's tail text -> a parser for one reply
    markers: tuple[str, ...]  # tokens the vocabulary must have
    template_mark: str | None  # what the chat template writes (None: never detected)
    keeps_special_tokens: bool = False  # markers are special tokens: detokenize with them

    def matches(self, chat_template: str | None, has_token: HasToken) -> bool:
        if self.template_mark is None or chat_template is None:
            return False
        return self.template_mark in chat_template and all(map(has_token, self.markers))

    def reply_parser(self, tokenizer: Tokenizer, prompt_ids: Sequence[int]) -> ReplyParser:
        """A parser for one reply to `prompt_ids`."""
        tail = prompt_ids[-PROMPT_TAIL:] if prompt_ids else []
        return self.parser(tokenizer.decode(tail, skip_special_tokens=False))


NONE = ReasoningFormat("none", PlainParser, (), None)
FORMATS: dict[str, ReasoningFormat] = {
    "none": NONE,
    "think": ReasoningFormat("think", think.ThinkParser, (think.OPEN, think.CLOSE), think.OPEN),
    "harmony": ReasoningFormat(
        "harmony",
        harmony.HarmonyParser,
        (harmony.START, harmony.CHANNEL, harmony.MESSAGE, harmony.END),
        harmony.CHANNEL,
        keeps_special_tokens=True,
    ),
}
CHOICES = (AUTO, *FORMATS)


def detect_format(chat_template: str | None, has_token: HasToken) -> ReasoningFormat:
    """The format a model with this chat template and vocabulary speaks."""
    found = [f for f in FORMATS.values() if f.matches(chat_template, has_token)]
    return found[0] if found else NONE


def model_format(tokenizer: Tokenizer) -> ReasoningFormat:
    def has_token(token: str) -> bool:
        return tokenizer.token_to_id(token) is not None

    return detect_format(tokenizer.assets.chat_template, has_token)


def check_format(name: str, param: str = "reasoning_format") -> str:
    """`name` as one of CHOICES (aliases resolved); InvalidFieldError naming `param` else."""
    name = ALIASES.get(name, name)
    if name not in CHOICES:
        raise InvalidFieldError(
            f"{param} must be one of {', '.join(CHOICES)} (or deepseek, taken as auto), "
            f"got {name!r}",
            param,
        )
    return name


def resolve_format(
    name: str, tokenizer: Tokenizer, param: str = "reasoning_format"
) -> ReasoningFormat:
    """The format `name` (a CHOICE) means for the model of `tokenizer`."""
    name = check_format(name, param)
    return model_format(tokenizer) if name == AUTO else FORMATS[name]
