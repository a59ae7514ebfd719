"""Keyword arguments of `create(...)` as the request body the server would have received:
the same schema (mlcx.runtime.openai_api.schemas), read from the same JSON, so that a request
is valid, defaulted and refused alike in process and over HTTP."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mlcx.errors import InvalidFieldError
from mlcx.runtime.openai_api.errors import validation_error

Body = TypeVar("Body", bound=BaseModel)
# the OpenAI client's per-call options, which mean nothing in process
CLIENT_OPTIONS = ("extra_headers", "extra_query", "timeout")


def request_body(schema: type[Body], kwargs: dict[str, Any], model: str) -> Body:
    """`kwargs` (and their `extra_body`, merged in as the OpenAI client sends it) as a
    validated `schema`; `model` where the call names none. InvalidFieldError naming the field
    where the server would answer 400."""
    given = {k: v for k, v in kwargs.items() if k not in CLIENT_OPTIONS and k != "extra_body"}
    extra = kwargs.get("extra_body") or {}
    if not isinstance(extra, dict):
        raise InvalidFieldError("extra_body must be a dict of extra request fields", "extra_body")
    body = {"model": model, **given, **extra}
    if body["model"] is None:
        body["model"] = model
    try:
        text = json.dumps(body)
    except (TypeError, ValueError) as err:
        raise InvalidFieldError(f"the request is not JSON-serializable ({err})") from None
    try:  # validated from the parsed JSON, as the server's framework does
        return schema.model_validate(json.loads(text))
    except ValidationError as err:
        raise validation_error(err.errors()) from None
