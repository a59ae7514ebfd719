"""How the OpenAI layer reports a bad request: an `InvalidFieldError` naming the field, the
one class the REST server answers with 400 (the OpenAI error envelope) and the in-process
engines raise as it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlcx.errors import InvalidFieldError

_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})


def bad_request(
    message: str, param: str | None = None, code: str | None = None
) -> InvalidFieldError:
    return InvalidFieldError(message, param, code)


def validation_error(errors: Sequence[Mapping[str, Any]]) -> InvalidFieldError:
    """The first problem pydantic found in a request body, with the field path as `param`."""
    first = errors[0]
    if first.get("type") == "json_invalid":
        reason = first.get("ctx", {}).get("error", "JSON decode error")
        return bad_request(f"the request body is not valid JSON ({reason})")
    path, tag = _split_loc(first.get("loc", ()))
    param = ".".join(path) or None
    shown = "input" in first and path and first.get("type") != "missing"
    got = f", got {first['input']!r}" if shown else ""
    if tag is not None:  # a union: name every accepted type, not just the first one tried
        kinds: list[str] = []
        for other in errors:
            other_path, other_tag = _split_loc(other.get("loc", ()))
            if other_path == path and other_tag and other_tag not in kinds:
                kinds.append(other_tag)
        return bad_request(f"{param} must be one of: {', '.join(kinds)}{got}", param=param)
    message = first.get("msg", "invalid request")
    return bad_request(f"{param}: {message}{got}" if param else message, param=param)


def _split_loc(loc) -> tuple[list[str], str | None]:
    """(field path, union member tag such as 'list[str]' or None) of a pydantic error."""
    path: list[str] = []
    for part in loc:
        if part == "body":
            continue
        if isinstance(part, str) and (part in _TYPE_TAGS or "[" in part):
            return path, part
        path.append(str(part))
    return path, None
