"""Every error leaves the server as an OpenAI error envelope, never a 422 or a traceback:

{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}

The OpenAI layer (mlcx.runtime.openai_api) raises the errors an in-process caller sees
(InvalidFieldError and its kinds, QueueFullError, EngineFailedError); `from_error` gives each
its status here, so that the server and MLCEngine fail alike for the same request.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from mlcx.errors import InvalidFieldError, ModelNotFoundError, QueueFullError
from mlcx.runtime.api.async_engine import EngineFailedError
from mlcx.runtime.openai_api.errors import validation_error

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


def from_error(err: Exception) -> APIError | None:
    """The response of an error the OpenAI layer raised; None for any other."""
    if isinstance(err, InvalidFieldError):
        status = 404 if isinstance(err, ModelNotFoundError) else 400
        return APIError(status, str(err), param=err.param, code=err.code)
    if isinstance(err, QueueFullError):
        return APIError(503, str(err), SERVER_ERROR, code="queue_full")
    if isinstance(err, EngineFailedError):
        return APIError(500, str(err), SERVER_ERROR)
    return None


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api(_: Request, err: APIError) -> JSONResponse:
        return err.response()

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, err: RequestValidationError) -> JSONResponse:
        return _response(validation_error(err.errors()))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, err: HTTPException) -> JSONResponse:
        kind = INVALID_REQUEST if err.status_code < 500 else SERVER_ERROR
        return APIError(err.status_code, str(err.detail), kind).response(err.headers)

    # the OpenAI layer's errors, each its own handler (an `Exception` handler runs in
    # Starlette's outermost middleware, which logs and re-raises what it handled)
    for kind in (InvalidFieldError, QueueFullError, EngineFailedError):
        app.add_exception_handler(kind, _known)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, err: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return APIError(500, "internal server error; see the server log", SERVER_ERROR).response()


async def _known(_: Request, err: Exception) -> JSONResponse:
    return _response(err)


def _response(err: Exception) -> JSONResponse:
    mapped = from_error(err)
    if mapped is None:  # not one of the layer's: a bug, answered as one
        log.error("unexpected error", exc_info=err)
        mapped = APIError(500, "internal server error; see the server log", SERVER_ERROR)
    return mapped.response()
