"""What a request's output must match: a JSON object, a JSON schema, a regex or a grammar.

Validated for shape here, once, at the edge; compiled against a tokenizer by llguidance in the
sampler (`mlcx/runtime/structured/matcher.py`), where a schema or grammar llguidance refuses
is reported as an InvalidFieldError naming `param`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mlcx.errors import InvalidFieldError

# kind -> what `spec` holds
KINDS = {
    "json_object": "nothing (any JSON object)",
    "json_schema": "a JSON schema, as JSON text",
    "regex": "a regular expression the whole output matches",
    "grammar": "a Lark grammar (llguidance's dialect; GBNF is converted by the caller)",
}


@dataclass(frozen=True)
class Constraint:
    kind: str
    spec: str = ""
    # the request field it came from, for errors (e.g. "response_format", "regex", "tools")
    param: str = "constraint"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidFieldError(
                f"unknown constraint kind {self.kind!r}; one of {', '.join(KINDS)}", self.param
            )
        what = f"a {self.kind} constraint"
        if not isinstance(self.spec, str):
            raise InvalidFieldError(f"{what} is text, got {self.spec!r}", self.param)
        if self.kind == "json_object" and self.spec:
            raise InvalidFieldError("a json_object constraint takes no schema", self.param)
        if self.kind != "json_object" and not self.spec.strip():
            raise InvalidFieldError(f"{what} needs {KINDS[self.kind]}", self.param)
        if self.kind == "json_schema":
            self.schema()

    def schema(self) -> dict:
        """The JSON schema of a json_schema constraint ({"type": "object"} for json_object)."""
        if self.kind == "json_object":
            return {"type": "object"}
        try:
            schema = json.loads(self.spec)
        except json.JSONDecodeError as e:
            raise InvalidFieldError(f"the JSON schema is not valid JSON: {e}", self.param) from None
        if not isinstance(schema, dict):
            raise InvalidFieldError("a JSON schema must be a JSON object", self.param)
        return schema

    @classmethod
    def json_schema(cls, schema: dict, param: str = "constraint") -> Constraint:
        return cls("json_schema", json.dumps(schema), param)
