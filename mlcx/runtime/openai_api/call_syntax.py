"""The syntax a model writes tool calls in, told by its chat template: the JSON object in a
`<tool_call>` block (Hermes-style: Qwen2.5, Qwen3, Llama and the generic format,
tool_calls.py) or the XML of Qwen3.5 and Qwen3-Coder (`<function=NAME>` with `<parameter=KEY>`
children, xml_calls.py). llama.cpp and vLLM tell the two the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlcx.runtime.openai_api.tool_calls import CallList, CallScanner
from mlcx.runtime.openai_api.xml_calls import XmlCallScanner

# a syntax -> its scanner, made for a reply's call list and the tools' argument schemas
Scanner = Callable[[CallList], Any]
SYNTAXES: dict[str, Callable[[dict[str, dict[str, Any]]], Scanner]] = {
    "json": lambda parameters: CallScanner,
    "xml": lambda parameters: lambda calls: XmlCallScanner(calls, parameters),
}
XML_MARKS = ("<function=", "<parameter=")


def detect_syntax(chat_template: str | None) -> str:
    """The syntax replies to prompts of this template call tools in."""
    if chat_template and all(mark in chat_template for mark in XML_MARKS):
        return "xml"
    return "json"
