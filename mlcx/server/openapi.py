"""What /openapi.json says each route answers: errors as the OpenAI error envelope (see
`errors`), with the statuses the route and the guards in front of it really send.

Every route declares a "default" error response; that also keeps FastAPI from documenting a
422, which this server never sends (request validation errors are 400s).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from mlcx.server.config import ServerConfig
from mlcx.server.guards import OPEN_PATHS
from mlcx.server.metrics import CONTENT_TYPE

Responses = dict[int | str, dict[str, Any]]

WHY = {
    400: "Invalid request; `param` names the field at fault",
    401: "Missing or wrong API key",
    403: "The Host header is not local (the server listens on a loopback address)",
    404: "The model is not the one this server serves",
    413: "The request body is too large",
    503: "The model is loading, failed to load or is shutting down, or the queue is full",
    "default": "Any other error (500: the engine failed)",
}


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorEnvelope(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: Literal["ok", "loading", "failed", "draining"]
    error: str | None = None  # why loading failed


def errors(config: ServerConfig, path: str, *statuses: int) -> Responses:
    """The error responses of `path`: `statuses` from the route itself, and the guards'."""
    guards = [403] if config.is_loopback else []
    if config.api_key is not None and path not in OPEN_PATHS:
        guards.append(401)
    return {
        status: {"model": ErrorEnvelope, "description": WHY[status]}
        for status in sorted(guards + list(statuses))
    } | {"default": {"model": ErrorEnvelope, "description": WHY["default"]}}


def generation(config: ServerConfig, path: str) -> Responses:
    """/v1/completions and /v1/chat/completions: one JSON body, or a stream of events."""
    ok = {
        "description": "The response, or with stream=true its chunks as Server-Sent Events "
        "ending with `data: [DONE]`",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
    return {200: ok} | errors(config, path, 400, 404, 413, 503)


def metrics(config: ServerConfig) -> Responses:
    """/metrics, in the Prometheus text format. Its route's response class must be the plain
    `Response`: FastAPI puts error models under the route's own media type otherwise."""
    ok = {
        "description": "Prometheus metrics",
        "content": {CONTENT_TYPE: {"schema": {"type": "string"}}},
    }
    return {200: ok} | errors(config, "/metrics")


def health(config: ServerConfig) -> Responses:
    ready = {"model": Health, "description": "Ready"}
    not_ready = {"model": Health, "description": "Loading, failed or draining"}
    return {200: ready, 503: not_ready} | errors(config, "/health")
