"""Every error leaves the server as an OpenAI error envelope, never a 422 or a traceback:

{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

log = logging.getLogger(__name__)

INVALID_REQUEST = "invalid_request_error"
SERVER_ERROR = "server_error"


class APIError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        type: str = INVALID_REQUEST,
        param: str | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "type": type, "param": param, "code": code}

    def response(self, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"error": self.body}, status_code=self.status, headers=headers)


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def validation_error(error: RequestValidationError) -> APIError:
    """The first problem pydantic found, with the field path as `param`."""
    errors = error.errors()
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


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api(_: Request, err: APIError) -> JSONResponse:
        return err.response()

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, err: RequestValidationError) -> JSONResponse:
        return validation_error(err).response()

    @app.exception_handler(HTTPException)
    async def _http(_: Request, err: HTTPException) -> JSONResponse:
        kind = INVALID_REQUEST if err.status_code < 500 else SERVER_ERROR
        return APIError(err.status_code, str(err.detail), kind).response(err.headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, err: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return APIError(500, "internal server error; see the server log", SERVER_ERROR).response()
