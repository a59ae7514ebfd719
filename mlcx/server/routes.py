"""The endpoints: each parses its body and hands it to the served AsyncMLCEngine
(`ModelHost.require`), which validates, plans and runs it as it does in process; here are only
HTTP's parts: the status of each error, one JSON body or Server-Sent Events, the client going
away, and the latency metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from mlcx.runtime.api.async_engine import EngineFailedError
from mlcx.runtime.openai_api.embeddings import EmbeddingRequest
from mlcx.runtime.openai_api.schemas import ChatCompletionRequest, CompletionRequest
from mlcx.runtime.openai_api.serving import OpenedRequest
from mlcx.server import openapi
from mlcx.server.config import ServerConfig
from mlcx.server.disconnect import run_until_disconnect
from mlcx.server.errors import SERVER_ERROR, APIError
from mlcx.server.metrics import CONTENT_TYPE, RequestTimer, ServerMetrics
from mlcx.server.model_host import ModelHost
from mlcx.server.streaming import DONE, EventStream, sse

CLIENT_CLOSED = 499  # nginx's code: nobody reads it, the client is gone


def build_router(host: ModelHost, metrics: ServerMetrics, config: ServerConfig) -> APIRouter:
    router = APIRouter()

    @router.get("/health", responses=openapi.health(config))
    async def health() -> JSONResponse:
        body = {"status": host.status}
        if host.error is not None:
            body["error"] = host.error
        return JSONResponse(body, status_code=200 if host.status == "ok" else 503)

    @router.get("/metrics", response_class=Response, responses=openapi.metrics(config))
    async def prometheus() -> Response:
        return Response(metrics.render(await host.replica_stats()), media_type=CONTENT_TYPE)

    @router.get("/v1/models", responses=openapi.errors(config, "/v1/models"))
    async def models() -> JSONResponse:
        return JSONResponse({"object": "list", "data": host.model_cards()})

    @router.post("/v1/completions", responses=openapi.generation(config, "/v1/completions"))
    async def completions(body: CompletionRequest, request: Request) -> Response:
        timer = metrics.timer()
        opened = await host.require().open_completion(body)
        return await respond(request, opened, timer)

    @router.post(
        "/v1/chat/completions", responses=openapi.generation(config, "/v1/chat/completions")
    )
    async def chat(body: ChatCompletionRequest, request: Request) -> Response:
        timer = metrics.timer()
        opened = await host.require().open_chat(body)
        return await respond(request, opened, timer)

    @router.post(
        "/v1/embeddings", responses=openapi.errors(config, "/v1/embeddings", 400, 404, 413, 503)
    )
    async def embeddings(body: EmbeddingRequest) -> JSONResponse:
        return JSONResponse(await host.require().create_embeddings(body))

    return router


async def respond(request: Request, opened: OpenedRequest, timer: RequestTimer) -> Response:
    """One JSON body, or the chunks as events; a client that leaves aborts the request."""
    if opened.streaming:
        return EventStream(_events(opened, timer), on_close=opened.abort)
    body = await run_until_disconnect(opened.body(timer), request.receive)
    return Response(status_code=CLIENT_CLOSED) if body is None else JSONResponse(body)


async def _events(opened: OpenedRequest, timer: RequestTimer) -> AsyncIterator[str]:
    try:
        async for chunk in opened.chunks(timer):
            yield sse(chunk)
    except EngineFailedError as err:
        yield sse({"error": APIError(500, str(err), SERVER_ERROR).body})
    yield DONE
