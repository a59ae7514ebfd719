"""Running a plan on the engine and answering with one JSON body or an event stream.

Both answers consume the same `RequestStream`; leaving it early, for any reason, aborts the
unfinished choices (`RequestStream.abort_unfinished`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from mlcx.errors import ContextWindowError, InvalidFieldError, QueueFullError
from mlcx.runtime.api.async_engine import EngineFailedError
from mlcx.runtime.core.outputs import Completion, Delta
from mlcx.server.config import ServerConfig
from mlcx.server.disconnect import run_until_disconnect
from mlcx.server.engine_client import EngineClient, EngineStream
from mlcx.server.errors import SERVER_ERROR, APIError, bad_request
from mlcx.server.formats import ResponseFormat, usage
from mlcx.server.image_parts import load_images
from mlcx.server.metrics import RequestTimer
from mlcx.server.plans import GenerationPlan
from mlcx.server.streaming import DONE, EventStream, sse

CLIENT_CLOSED = 499  # nginx's code: nobody reads it, the client is gone


async def start(
    engine: EngineClient, plan: GenerationPlan, config: ServerConfig | None = None
) -> EngineStream:
    """Encode the plan's prompts in a worker thread (never on the event loop) and queue them:
    400 naming the field for a prompt that cannot run (or image part that cannot be used),
    503 when the engine's queue is full."""
    try:
        if plan.messages is None:
            prompt_ids = await engine.prepare(plan.prompts)
        elif plan.has_images:
            messages = await load_images(plan.messages, config or ServerConfig())
            ids, images = await engine.prepare_chat_images(messages, plan.tools)
            return await engine.open([ids], plan.params, images=[images])
        else:
            prompt_ids = [await engine.prepare_chat(plan.messages, plan.tools)]
        return await engine.open(prompt_ids, plan.params)
    except QueueFullError as err:
        raise APIError(503, str(err), SERVER_ERROR, code="queue_full") from None
    except ValueError as err:
        code = "context_length_exceeded" if isinstance(err, ContextWindowError) else None
        raise bad_request(str(err), _param(err, plan.prompt_field), code) from None


def _param(err: ValueError, prompt_field: str) -> str:
    """The request field `err` is about; the runtime calls every prompt "prompt"."""
    param = err.param if isinstance(err, InvalidFieldError) else None
    return prompt_field if param in (None, "prompt") else param


async def respond(
    request: Request,
    stream: EngineStream,
    plan: GenerationPlan,
    fmt: ResponseFormat,
    timer: RequestTimer,
) -> Response:
    if plan.stream:
        return EventStream(_events(stream, plan, fmt, timer), on_close=stream.abort_unfinished)
    body = await run_until_disconnect(_collect(stream, plan, fmt, timer), request.receive)
    return Response(status_code=CLIENT_CLOSED) if body is None else JSONResponse(body)


def _choice(stream: EngineStream, plan: GenerationPlan, delta: Delta) -> int:
    """Choices are numbered prompt by prompt: prompt p, choice i -> p * n + i."""
    return stream.prompt_index(delta) * plan.params.n + delta.index


def _prompt_tokens(stream: EngineStream) -> int:
    return sum(len(ids) for ids in stream.prompt_ids)


async def _collect(
    stream: EngineStream, plan: GenerationPlan, fmt: ResponseFormat, timer: RequestTimer
) -> dict:
    choices = [
        Completion(request_id, index, prompt_ids)
        for request_id, prompt_ids in zip(stream.request_ids, stream.prompt_ids, strict=True)
        for index in range(plan.params.n)
    ]
    async with stream:
        try:
            async for delta in stream:
                timer.observe(delta)
                choices[_choice(stream, plan, delta)].add(delta)
        except EngineFailedError as err:
            raise APIError(500, str(err), SERVER_ERROR) from None
    timer.finish()
    generated = sum(len(c.token_ids) for c in choices)
    return fmt.response(choices, usage(_prompt_tokens(stream), generated))


async def _events(
    stream: EngineStream, plan: GenerationPlan, fmt: ResponseFormat, timer: RequestTimer
) -> AsyncIterator[str]:
    generated = 0
    async with stream:
        for chunk in fmt.start_chunks(stream.prompt_ids, plan.params.n):
            yield sse(chunk)
        try:
            async for delta in stream:
                timer.observe(delta)
                generated += len(delta.token_ids)
                for chunk in fmt.chunks(_choice(stream, plan, delta), delta):
                    yield sse(chunk)
        except EngineFailedError as err:
            yield sse({"error": APIError(500, str(err), SERVER_ERROR).body})
            yield DONE
            return
    timer.finish()
    if plan.include_usage:
        yield sse(fmt.usage_chunk(usage(_prompt_tokens(stream), generated)))
    yield DONE
