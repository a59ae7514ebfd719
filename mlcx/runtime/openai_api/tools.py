"""`tools`, `tool_choice` and `parallel_tool_calls` of a chat request: what the chat template
receives, and what the output is constrained to.

- `none`: the template still sees the tools; the reply is content, never parsed.
- `auto` (the default with tools): the reply is parsed for calls in the generic format
  (mlcx/runtime/text/tool_prompt.py); anything else is content.
- `required`: the output is constrained to calls of any of the tools; with
  `parallel_tool_calls` (the default) to a JSON array of one or more calls, without it to one.
- a named function: the output is constrained to one call of that function.

A constrained call is the JSON object `{"name": ..., "arguments": {...}}`, name first, which is
the order llguidance writes schema properties in and the order the call parser expects.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llguidance

from mlcx.errors import InvalidFieldError
from mlcx.runtime.openai_api.errors import bad_request
from mlcx.runtime.openai_api.schemas import ChatCompletionRequest, Tool
from mlcx.runtime.structured.constraint import Constraint
from mlcx.runtime.structured.matcher import grammar_text, one_line

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
NO_ARGUMENTS = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ToolPlan:
    tools: list[dict[str, Any]]  # OpenAI's tool dicts, for the chat template
    parameters: dict[str, dict[str, Any]]  # name -> its arguments' JSON schema
    parse: bool  # the reply may hold calls
    constraint: Constraint | None  # set when calls are forced


def plan_tools(body: ChatCompletionRequest) -> ToolPlan | None:
    choice, name = _tool_choice(body.tool_choice)
    if body.tools is None:
        if body.tool_choice not in (None, "none"):
            raise bad_request("tool_choice needs tools; give the tools it may call", "tool_choice")
        return None
    parameters = _parameters(body.tools)
    if name is not None:
        constraint = _named(name, parameters)
    else:
        constraint = CHOICES[choice](parameters, body.parallel_tool_calls)
    tools = [tool.model_dump(exclude_none=True) for tool in body.tools]
    return ToolPlan(tools, parameters, choice != "none", constraint)


def _tool_choice(value: str | dict[str, Any] | None) -> tuple[str, str | None]:
    """(the choice, the function's name for a named one)."""
    if value is None:
        return "auto", None
    if isinstance(value, str) and value in CHOICES:
        return value, None
    if isinstance(value, dict) and value.get("type") == "function":
        function = value.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return "function", function["name"]
    raise bad_request(
        f"tool_choice must be one of {', '.join(CHOICES)} or "
        f'{{"type": "function", "function": {{"name": ...}}}}, got {value!r}',
        "tool_choice",
    )


def _parameters(tools: list[Tool]) -> dict[str, dict[str, Any]]:
    """name -> the JSON schema of its arguments, each checked."""
    if not tools:
        raise bad_request("tools is empty; give at least one tool or leave tools out", "tools")
    parameters: dict[str, dict[str, Any]] = {}
    for index, tool in enumerate(tools):
        name = tool.function.name
        _check_tool(index, tool)
        if name in parameters:
            raise bad_request(f"tools has two functions named {name!r}", f"tools.{index}")
        parameters[name] = tool.function.parameters or NO_ARGUMENTS
    return parameters


def _check_tool(index: int, tool: Tool) -> None:
    param = f"tools.{index}.function"
    if not NAME.match(tool.function.name):
        raise bad_request(
            f"tools[{index}].function.name must be 1 to 64 letters, digits, _ or -, "
            f"got {tool.function.name!r}",
            f"{param}.name",
        )
    schema = tool.function.parameters
    if schema is None:
        return
    if schema.get("type", "object") != "object":
        raise bad_request(
            f"tools[{index}].function.parameters must be a JSON schema of type object",
            f"{param}.parameters",
        )
    # Checked now, without a tokenizer: with `auto` or `none` no constraint is ever compiled.
    try:
        grammar = grammar_text(Constraint.json_schema(schema, f"{param}.parameters"))
    except InvalidFieldError as err:
        raise bad_request(str(err), err.param) from None
    error = llguidance.LLMatcher.validate_grammar(grammar)
    if error:
        raise bad_request(
            f"tools[{index}].function.parameters is not a usable JSON schema: {one_line(error)}",
            f"{param}.parameters",
        )


def call_schema(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": parameters},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def _named(name: str, parameters: dict[str, dict[str, Any]]) -> Constraint:
    if name not in parameters:
        raise bad_request(
            f"tool_choice names {name!r}, which is not in tools ({', '.join(parameters)})",
            "tool_choice",
        )
    return Constraint.json_schema(call_schema(name, parameters[name]), "tool_choice")


def _required(parameters: dict[str, dict[str, Any]], parallel: bool) -> Constraint:
    calls = [call_schema(name, schema) for name, schema in parameters.items()]
    one = calls[0] if len(calls) == 1 else {"anyOf": calls}
    schema = {"type": "array", "items": one, "minItems": 1} if parallel else one
    return Constraint.json_schema(schema, "tool_choice")


def _unconstrained(parameters: dict[str, dict[str, Any]], parallel: bool) -> None:
    return None


# tool_choice -> the constraint it puts on the output
CHOICES: dict[str, Callable[[dict[str, dict[str, Any]], bool], Constraint | None]] = {
    "none": _unconstrained,
    "auto": _unconstrained,
    "required": _required,
}
