"""What a request says its output must match: `response_format` (chat), and mlcx's `regex`
and `grammar` extra body fields (chat and completions), as one `Constraint`.

The shapes are checked here; whether llguidance can compile a schema, regex or grammar is
checked by the engine when the request is added (an InvalidFieldError naming the field,
which `generation.start` turns into a 400 like these).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mlcx.errors import InvalidFieldError
from mlcx.runtime.openai_api.errors import bad_request
from mlcx.runtime.openai_api.schemas import SamplingFields
from mlcx.runtime.structured.constraint import Constraint

PARAM = "response_format"


def _text(_: dict[str, Any]) -> Constraint | None:
    return None


def _json_object(_: dict[str, Any]) -> Constraint | None:
    return Constraint("json_object", param=PARAM)


def _json_schema(response_format: dict[str, Any]) -> Constraint | None:
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict):
        raise bad_request(
            'response_format.json_schema must be an object {"name": ..., "schema": {...}}', PARAM
        )
    if not isinstance(spec.get("name"), str) or not spec["name"]:
        raise bad_request("response_format.json_schema.name must be a non-empty string", PARAM)
    schema = spec.get("schema", {"type": "object"})
    if not isinstance(schema, dict):
        raise bad_request("response_format.json_schema.schema must be a JSON schema object", PARAM)
    return Constraint.json_schema(schema, PARAM)


# response_format.type -> its constraint
FORMATS: dict[str, Callable[[dict[str, Any]], Constraint | None]] = {
    "text": _text,
    "json_object": _json_object,
    "json_schema": _json_schema,
}


def response_format_constraint(response_format: dict[str, Any] | None) -> Constraint | None:
    if response_format is None:
        return None
    kind = response_format.get("type")
    if kind not in FORMATS:
        raise bad_request(
            f"response_format.type must be one of {', '.join(FORMATS)}, got {kind!r}", PARAM
        )
    try:
        return FORMATS[kind](response_format)
    except InvalidFieldError as err:
        raise bad_request(str(err), err.param) from None


def extension_constraints(body: SamplingFields) -> list[Constraint]:
    """The `regex` and `grammar` extra body fields, as constraints."""
    found = []
    for kind in ("regex", "grammar"):
        spec = getattr(body, kind)
        if spec is None:
            continue
        try:
            found.append(Constraint(kind, spec, kind))
        except InvalidFieldError as err:
            raise bad_request(str(err), err.param) from None
    return found


def only_one(constraints: Sequence[Constraint | None]) -> Constraint | None:
    """The request's one constraint; a 400 naming the second when there are more."""
    given = [c for c in constraints if c is not None]
    if len(given) > 1:
        first, second = given[0].param, given[1].param
        raise bad_request(
            f"{second} cannot be combined with {first}: a request's output can follow only one "
            "constraint",
            second,
        )
    return given[0] if given else None
