"""Constraints read from files: a JSON schema, or a grammar in Lark or GBNF (llama.cpp's form).

Every error is an InvalidFieldError whose message starts with `param` (the option or field
the file came from), so a command line can print it as it is.
"""

from __future__ import annotations

from pathlib import Path

from llguidance.gbnf_to_lark import gbnf_to_lark

from mlcx.errors import InvalidFieldError
from mlcx.runtime.structured.constraint import Constraint
from mlcx.runtime.structured.matcher import one_line

GBNF_SUFFIXES = (".gbnf",)


def _read(path: Path, param: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise InvalidFieldError(f"{param}: cannot read {path}: {reason}", param) from None


def _named(param: str, build) -> Constraint:
    try:
        return build()
    except InvalidFieldError as err:
        raise InvalidFieldError(f"{param}: {err}", param) from None


def json_schema_file(path: Path, param: str) -> Constraint:
    """A json_schema constraint from a file holding one JSON schema."""
    text = _read(path, param)
    return _named(param, lambda: Constraint("json_schema", text, param))


def lark_from_gbnf(text: str, param: str) -> str:
    """The Lark form (llguidance's dialect) of a GBNF grammar."""
    try:
        return gbnf_to_lark(text)
    except Exception as err:  # llguidance's converter raises bare Exceptions for bad rules
        message = f"{param}: not a valid GBNF grammar: {one_line(str(err))}"
        raise InvalidFieldError(message, param) from None


def grammar_file(path: Path, param: str) -> Constraint:
    """A grammar constraint from a Lark file, or a GBNF one (by its .gbnf suffix)."""
    text = _read(path, param)
    if Path(path).suffix.lower() in GBNF_SUFFIXES:
        text = lark_from_gbnf(text, param)
    return _named(param, lambda: Constraint("grammar", text, param))


def regex_option(regex: str, param: str) -> Constraint:
    return _named(param, lambda: Constraint("regex", regex, param))


def output_constraint(
    json_schema: Path | None, regex: str | None, grammar: Path | None
) -> Constraint | None:
    """The constraint of a command line's --json-schema, --regex or --grammar (at most one)."""
    options = {"--json-schema": json_schema, "--regex": regex, "--grammar": grammar}
    given = [name for name, value in options.items() if value is not None]
    if len(given) > 1:
        raise InvalidFieldError(f"{' and '.join(given)} exclude each other; give one", given[1])
    if json_schema is not None:
        return json_schema_file(json_schema, "--json-schema")
    if regex is not None:
        return regex_option(regex, "--regex")
    return None if grammar is None else grammar_file(grammar, "--grammar")
