"""A reply split as its model writes it: reasoning, content and tool calls.

Parsers (`think.py` for `<think>...</think>`, `harmony.py` for gpt-oss's channels, and the
plain one) are fed detokenized text deltas and return typed events (`events.py`); each is
made for one reply from the tail of its prompt, which says where the reply begins.
`formats.py` names them and finds a model's own; `reply.py` accumulates a whole reply. The
server, `mlcx chat`, the Python API and the browser library (web/src/reasoning.js, held to
the same vectors) all use them.
"""

from mlcx.runtime.text.reasoning.events import (
    Content,
    Reasoning,
    ReplyEvent,
    ToolCallArguments,
    ToolCallStart,
)
from mlcx.runtime.text.reasoning.formats import (
    CHOICES,
    FORMATS,
    ReasoningFormat,
    ReplyParser,
    check_format,
    model_format,
    resolve_format,
)
from mlcx.runtime.text.reasoning.reply import ParsedReply, ToolCall

__all__ = [
    "CHOICES",
    "FORMATS",
    "Content",
    "ParsedReply",
    "Reasoning",
    "ReasoningFormat",
    "ReplyEvent",
    "ReplyParser",
    "ToolCall",
    "ToolCallArguments",
    "ToolCallStart",
    "check_format",
    "model_format",
    "resolve_format",
]
