"""The endpoints. Each one parses, plans and hands over to `generation`; they talk to the
served model only through its `EngineClient` (from `ModelHost.require`): a local engine
or engine replicas on Ray Serve."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from mlcx.runtime.text.reasoning import resolve_format
from mlcx.server import openapi
from mlcx.server.config import ServerConfig
from mlcx.server.embeddings import EmbeddingRequest, create_embeddings
from mlcx.server.formats import ChatFormat, CompletionFormat
from mlcx.server.generation import respond, start
from mlcx.server.metrics import CONTENT_TYPE, ServerMetrics
from mlcx.server.model_host import ModelHost
from mlcx.server.plans import plan_chat, plan_completion
from mlcx.server.schemas import ChatCompletionRequest, CompletionRequest


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
        names = host.model_names[:1]
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "mlcx"} for n in names]
        return JSONResponse({"object": "list", "data": data})

    @router.post("/v1/completions", responses=openapi.generation(config, "/v1/completions"))
    async def completions(body: CompletionRequest, request: Request) -> Response:
        timer = metrics.timer()
        engine = host.require(body.model)
        plan = plan_completion(body, engine.sampling_defaults)
        fmt = CompletionFormat(body.model, engine.tokenizer, plan.include_usage)
        return await respond(request, await start(engine, plan), plan, fmt, timer)

    @router.post(
        "/v1/chat/completions", responses=openapi.generation(config, "/v1/chat/completions")
    )
    async def chat(body: ChatCompletionRequest, request: Request) -> Response:
        timer = metrics.timer()
        engine = host.require(body.model)
        plan = plan_chat(body, engine.sampling_defaults, config.reasoning_format)
        reasoning = resolve_format(plan.reasoning_format, engine.tokenizer)
        fmt = ChatFormat(
            body.model, engine.tokenizer, plan.include_usage, plan.tool_plan, reasoning
        )
        return await respond(request, await start(engine, plan, config), plan, fmt, timer)

    @router.post(
        "/v1/embeddings", responses=openapi.errors(config, "/v1/embeddings", 400, 404, 413, 503)
    )
    async def embeddings(body: EmbeddingRequest) -> JSONResponse:
        embedder = host.require_embedder(body.model)
        return JSONResponse(await create_embeddings(embedder, body))

    return router
