"""The ASGI app: routes, OpenAI error envelopes, the request guards and the engine's lifetime."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from mlcx.runtime.api.async_mlc_engine import AsyncMLCEngine
from mlcx.server.config import ServerConfig
from mlcx.server.errors import install_error_handlers
from mlcx.server.guards import ApiKeyAuth, BodySizeLimit, LocalHostGuard
from mlcx.server.metrics import ServerMetrics
from mlcx.server.model_host import EngineSource, ModelHost
from mlcx.server.routes import build_router


def create_app(source: EngineSource, config: ServerConfig = ServerConfig()) -> FastAPI:
    """`source`: an AsyncMLCEngine, or what one serves (an Engine, an engine client, an
    embedder), or a function that loads one (it then runs in a thread while the server
    already answers /health with 503)."""
    make = functools.partial(
        AsyncMLCEngine, reasoning_format=config.reasoning_format, images=config.images
    )
    host = ModelHost(source, config.model_name, make)
    metrics = ServerMetrics()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        host.start()
        try:
            yield
        finally:
            await host.stop()

    app = FastAPI(title="mlcx", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.host = host
    app.state.metrics = metrics
    app.include_router(build_router(host, metrics, config))
    install_error_handlers(app)
    # add_middleware wraps: the last one added runs first.
    app.add_middleware(BodySizeLimit)
    if config.api_key is not None:
        app.add_middleware(ApiKeyAuth, api_key=config.api_key)
    if config.allow_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.allow_origins),
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "X-Api-Key"],
        )
    if config.is_loopback:
        app.add_middleware(LocalHostGuard)
    return app
