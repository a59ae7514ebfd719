"""Who may talk to the server, and how much: the DNS-rebinding guard, the API key and a
request body size limit.

Plain ASGI middleware rather than Starlette's BaseHTTPMiddleware, which wraps streaming
responses and gets in the way of disconnect detection.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mlcx.server.errors import APIError

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_BODY_BYTES = 16 << 20  # far above any prompt that fits a context window
OPEN_PATHS = frozenset({"/health", "/v1/models"})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def host_name(host_header: str) -> str:
    """'localhost:8000' -> 'localhost', '[::1]:8000' -> '::1'."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class LocalHostGuard:
    """On a loopback bind, refuse requests whose Host is not local.

    A web page can point its own domain name at 127.0.0.1 (DNS rebinding) and then read the
    server's answers as same-origin; such requests carry that domain as their Host.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            host = host_name(_header(scope, b"host") or "").lower()
            if host not in LOCAL_HOSTS and not host.endswith(".localhost"):
                error = APIError(
                    403,
                    f"Host {host!r} is not allowed: this server listens on a loopback "
                    "address and only answers requests addressed to localhost",
                    type="permission_error",
                    code="host_not_allowed",
                )
                await error.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


class ApiKeyAuth:
    """Requires `Authorization: Bearer KEY` or `X-Api-Key: KEY` outside OPEN_PATHS."""

    def __init__(self, app: ASGIApp, api_key: str):
        self.app = app
        self._key = api_key.encode()

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS and not self._ok(scope):
            error = APIError(
                401,
                "a valid API key is required: send 'Authorization: Bearer KEY' or 'X-Api-Key: KEY'",
                code="invalid_api_key",
            )
            await error.response({"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _ok(self, scope: Scope) -> bool:
        given = _header(scope, b"x-api-key")
        bearer = _header(scope, b"authorization")
        if given is None and bearer is not None and bearer[:7].lower() == "bearer ":
            given = bearer[7:].strip()
        # compare_digest: the time taken must not tell how much of a guess was right.
        return given is not None and hmac.compare_digest(given.encode(), self._key)


class BodySizeLimit:
    """Refuses bodies announced larger than MAX_BODY_BYTES, before they are read into memory.

    uvicorn sets no limit of its own.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES):
        self.app = app
        self._max = max_bytes

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        length = _header(scope, b"content-length") if scope["type"] == "http" else None
        if length is not None and (not length.isdigit() or int(length) > self._max):
            error = APIError(
                413, f"the request body is larger than {self._max} bytes", code="body_too_large"
            )
            await error.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)
