"""Tools for a chat template that knows nothing of tools: the generic format.

A template that reads the `tools` variable (Hugging Face's convention) renders tools, the
assistant's `tool_calls` and `tool` messages itself. For any other template the conversation
is rewritten into plain messages before rendering:

- the tool list and the calling convention go into the first system message (one is added
  when there is none): one JSON line per tool, then how to call them;
- an assistant message's `tool_calls` become `<tool_call>` blocks after its content;
- a `tool` message stays as it is, its content the tool's result (as transformers renders it).

The calling convention, which the server parses back (mlcx/server/tool_calls.py), is one
block per call:

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>
"""

from __future__ import annotations

import json
from typing import Any

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"

INSTRUCTIONS = (
    "You can call these tools; each line is one tool's JSON description:\n{tools}\n\n"
    "To call tools, reply with one block per call and nothing else, each block holding a "
    'JSON object with the tool\'s "name" and its "arguments":\n'
    f'{CALL_OPEN}\n{{"name": "<tool name>", "arguments": {{<arguments>}}}}\n{CALL_CLOSE}'
)  # {tools}: the listing


def call_block(name: str, arguments: Any) -> str:
    """One call in the generic format; `arguments` as validate_messages leaves them (a dict)."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


def with_generic_tools(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """`messages` rewritten in the generic format, with the tools in the system message."""
    plain = [_plain(message) for message in messages]
    if not tools:
        return plain
    listing = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    instructions = INSTRUCTIONS.replace("{tools}", listing)
    if plain[0]["role"] == "system":
        first = plain[0]
        return [{**first, "content": f"{first['content']}\n\n{instructions}"}, *plain[1:]]
    return [{"role": "system", "content": instructions}, *plain]


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not calls:
        return message
    blocks = [call_block(c["function"]["name"], c["function"]["arguments"]) for c in calls]
    text = "\n".join([message["content"], *blocks] if message["content"] else blocks)
    return {"role": message["role"], "content": text}
