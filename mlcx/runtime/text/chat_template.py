"""Rendering a model's chat template (Jinja, as Hugging Face tokenizers ship it) into a prompt.

Templates are untrusted code from the model source, so they run in jinja2's immutable sandbox with
the same options and helpers transformers gives them (`trim_blocks`, `lstrip_blocks`,
`raise_exception`, `tojson`, `strftime_now`, `{% break %}`/`{% continue %}`).

A model that ships no template gets `FALLBACK_TEMPLATE`: one `role: content` line per message and,
for a generation prompt, a final `assistant:` (no trailing space, so a byte-level BPE model starts
its reply with its own space token, as it saw in training text). It is plain text on purpose: a
base model has no chat format, and inventing special tokens it never saw would only confuse it.

Tools reach a template as Hugging Face's do: the `tools` variable (a list of OpenAI tool dicts),
assistant messages with `tool_calls` (arguments as dicts) and `tool` messages with
`tool_call_id`. A template that never reads `tools` gets the conversation rewritten in the
generic format of `mlcx/runtime/text/tool_prompt.py` instead.

An assistant message's reasoning (`reasoning_content`, as OpenAI-compatible servers return
it) reaches the template under that name (Qwen3's read it) and as `thinking` (gpt-oss's);
the template decides whether a past turn's reasoning is rendered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from mlcx.errors import MessagesError
from mlcx.frontends.tokenizer_assets import TokenizerAssets
from mlcx.runtime.text.tool_prompt import with_generic_tools

ROLES = frozenset({"system", "user", "assistant", "tool"})

FALLBACK_TEMPLATE = (
    "{% for message in messages %}"
    "{{ message['role'] + ': ' + message['content'] + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}"
)


class ChatTemplate:
    def __init__(
        self, source: str | None, bos_token: str | None = None, eos_token: str | None = None
    ) -> None:
        self.source = FALLBACK_TEMPLATE if source is None else source
        self.is_fallback = source is None
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._template, self.knows_tools = _compile(self.source)

    @classmethod
    def of(cls, assets: TokenizerAssets) -> ChatTemplate:
        """The model's chat template, or the documented fallback when it has none."""
        return cls(assets.chat_template, assets.bos_token, assets.eos_token)

    def render(
        self,
        messages: list[dict[str, Any]],
        add_generation_prompt: bool = True,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """The prompt text for `messages`; with `add_generation_prompt`, ready for the reply."""
        checked = validate_messages(messages)
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        if not self.knows_tools:
            checked, extra = with_generic_tools(checked, tools), {}
        try:
            return self._template.render(
                messages=checked,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token or "",
                eos_token=self.eos_token or "",
                **extra,
            )
        except (jinja2.TemplateError, TypeError) as error:
            raise MessagesError(
                f"the model's chat template failed on these messages: {error}; "
                "check the messages against the format the model expects"
            ) from error


def validate_messages(messages: Any) -> list[dict[str, Any]]:
    """Plain-dict copies of `messages`, each with a known `role` and a string `content`."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise MessagesError(f"messages must be a list of dicts, got {type(messages).__name__}")
    if not messages:
        raise MessagesError("messages is empty; pass at least one message")
    return [_validate_message(index, message) for index, message in enumerate(messages)]


def _validate_message(index: int, message: Any) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise MessagesError(f"messages[{index}] must be a dict, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise MessagesError(
            f"messages[{index}].role is {role!r}; it must be one of {sorted(ROLES)}"
        )
    content = message.get("content")
    calls = message.get("tool_calls")
    if content is None and calls and role == "assistant":
        content = ""  # templates concatenate content; a tool-calling turn may have none
    if not isinstance(content, str) and not _parts(content):
        raise MessagesError(
            f"messages[{index}].content must be a string or a list of text and image parts, "
            f"got {type(content).__name__}"
        )
    checked = {**message, "content": content}
    reasoning = message.get("reasoning_content")
    if role == "assistant" and isinstance(reasoning, str) and "thinking" not in message:
        checked["thinking"] = reasoning
    if calls:
        checked["tool_calls"] = [_tool_call(index, call) for call in calls]
    return checked


def _parts(content: Any) -> bool:
    """Whether content is a list of parts the templates of image models take:
    {"type": "text", "text": ...} and {"type": "image"} (runtime.vision.prompt)."""
    if not isinstance(content, list) or not content:
        return False
    return all(
        isinstance(p, Mapping)
        and (
            p.get("type") == "image" or (p.get("type") == "text" and isinstance(p.get("text"), str))
        )
        for p in content
    )


def _tool_call(index: int, call: Any) -> dict[str, Any]:
    """A tool call as templates read it: OpenAI's shape, arguments as a dict (OpenAI sends
    them as JSON text)."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise MessagesError(
            f"messages[{index}].tool_calls entries need function.name and function.arguments"
        )
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as error:
            raise MessagesError(
                f"messages[{index}].tool_calls: the arguments of {function['name']!r} "
                f"are not valid JSON ({error})"
            ) from None
    return {**call, "function": {**function, "arguments": arguments}}


def _compile(source: str) -> tuple[jinja2.Template, bool]:
    """The template, and whether it reads the `tools` variable."""
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    try:
        tree = environment.parse(source)
        return environment.from_string(tree), "tools" in meta.find_undeclared_variables(tree)
    except jinja2.TemplateSyntaxError as error:
        raise ValueError(
            f"the model's chat template is not valid Jinja (line {error.lineno}: {error.message}); "
            "fix chat_template in the model's tokenizer files"
        ) from error


def _raise_exception(message: str) -> NoReturn:
    raise MessagesError(f"the model's chat template rejected the messages: {message}")


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # Unlike jinja2's built-in, no HTML escaping: the output is a prompt, not a web page.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)
