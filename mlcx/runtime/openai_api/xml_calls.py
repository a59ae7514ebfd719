"""Tool calls in the XML syntax the chat templates of Qwen3.5 and Qwen3-Coder teach, piece by
piece as they stream:

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

Each `<function=...>` block becomes one OpenAI call whose arguments are the JSON object of its
parameters. The templates write a string value as it is, an object or array as JSON and other
scalars as Python's str() (5, 2.5, True, None), so a value is read by the type its tool's schema
gives the parameter (as vLLM's qwen3_coder parser reads it); a parameter the schema does not
type is taken as JSON where it parses, else as a string. Values are written as JSON text
directly (web/src/xml_calls.js writes the same bytes). A call's start is sent when its name is
complete, each parameter when its closing tag arrives, the closing brace with `</function>`.
Text around the blocks (the `<tool_call>` tags) is skipped, as the JSON syntax's scanner does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlcx.runtime.openai_api.tool_calls import CallList

FUNCTION = re.compile(r"<function=([^>\n]+)>")
PARAMETER = re.compile(r"<parameter=([^>\n]+)>")
FUNCTION_CLOSE, PARAMETER_CLOSE = "</function>", "</parameter>"
PYTHON_SCALARS = {"True": "true", "False": "false", "None": "null"}


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _reject(name: str):
    raise ValueError(name)  # NaN and Infinity are not JSON


def _json(text: str) -> str | None:
    """`text` itself where it is one JSON value (kept as written, numbers included), else
    None."""
    try:
        json.loads(text, parse_constant=_reject)
    except ValueError:
        return None
    return text.strip()


def _any(text: str) -> str:
    return _json(text) or PYTHON_SCALARS.get(text.strip()) or _string(text)


def _number(text: str) -> str:
    found = _json(text)
    is_number = found is not None and found[:1] in "-0123456789"
    return found if is_number else _string(text)


def _boolean(text: str) -> str:
    return {"true": "true", "false": "false"}.get(text.strip().lower()) or _string(text)


def _null(text: str) -> str:
    return "null" if text.strip() in ("null", "None") else _string(text)


# a schema type -> a value of that type as JSON text
READERS: dict[str, Callable[[str], str]] = {
    "string": _string,
    "integer": _number,
    "number": _number,
    "boolean": _boolean,
    "null": _null,
    "object": _any,
    "array": _any,
}


def value_json(text: str, schema: dict[str, Any] | None) -> str:
    """A parameter's value as JSON text of the type its schema asks for (`schema`: the
    parameter's own): strings quoted, the rest kept as the model wrote them where they are
    JSON already (so numbers keep their digits), Python's True/False/None as JSON's."""
    kind = (schema or {}).get("type")
    if isinstance(kind, list):  # ["string", "null"] and the like: the first that is not null
        kind = next((k for k in kind if k != "null"), None)
    return READERS.get(kind, _any)(text)


@dataclass
class XmlCallScanner:
    """Finds calls in text fed piece by piece; `feed` returns their tool_calls delta entries
    (CallList's). `parameters`: each tool's arguments schema, by name."""

    out: CallList = field(default_factory=CallList)
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    found: int = 0  # calls this scanner found
    _pending: str = ""
    _function: str | None = None  # the open call's name
    _written: int = 0  # parameters of the open call sent

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self.out.calls

    def feed(self, text: str) -> list[dict[str, Any]]:
        self._pending += text
        entries: list[dict[str, Any]] = []
        while (entry := self._next()) is not None:
            entries.append(entry)
        return entries

    def _next(self) -> dict[str, Any] | None:
        if self._function is None:
            return self._open()
        closing = self._pending.find(FUNCTION_CLOSE)
        found = PARAMETER.search(self._pending)
        if found and (closing < 0 or found.start() < closing):
            return self._parameter(found)
        if closing < 0:
            return None
        self._pending = self._pending[closing + len(FUNCTION_CLOSE) :]
        part = "}" if self._written else "{}"
        self._function = None
        return self.out.extend(len(self.calls) - 1, part)

    def _open(self) -> dict[str, Any] | None:
        found = FUNCTION.search(self._pending)
        if found is None:
            return None
        self._function, self._written = found.group(1).strip(), 0
        self._pending = self._pending[found.end() :]
        self.found += 1
        return self.out.start(self._function)

    def _parameter(self, found: re.Match) -> dict[str, Any] | None:
        end = self._pending.find(PARAMETER_CLOSE, found.end())
        if end < 0:
            return None  # the value is not complete yet
        name = found.group(1).strip()
        raw = self._pending[found.end() : end]
        raw = raw[1:] if raw.startswith("\n") else raw
        raw = raw[:-1] if raw.endswith("\n") else raw
        self._pending = self._pending[end + len(PARAMETER_CLOSE) :]
        schema = self.parameters.get(self._function or "", {}).get("properties", {}).get(name)
        value = value_json(raw, schema)
        part = f"{', ' if self._written else '{'}{_string(name)}: {value}"
        self._written += 1
        return self.out.extend(len(self.calls) - 1, part)
