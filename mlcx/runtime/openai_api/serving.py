"""An OpenAI request on an engine: plan it, encode and queue its prompts, then answer with one
response body or its stream of chunks (plain dicts, as the API's JSON has them).

`AsyncMLCEngine` (mlcx.runtime.api) runs every request through here, and the REST server runs
its requests through `AsyncMLCEngine`: one path, so the server and the in-process engines
answer alike. Leaving a stream early, for any reason, aborts the unfinished choices
(`EngineStream.abort_unfinished`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from mlcx.errors import InvalidFieldError, QueueFullError
from mlcx.runtime.core.outputs import Completion, Delta
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.openai_api.engine_client import EngineClient, EngineStream
from mlcx.runtime.openai_api.errors import bad_request
from mlcx.runtime.openai_api.formats import (
    ChatFormat,
    CompletionFormat,
    ResponseFormat,
    usage,
)
from mlcx.runtime.openai_api.image_parts import ANY_DATA_URL, ImagePolicy, load_images
from mlcx.runtime.openai_api.plans import GenerationPlan, plan_chat, plan_completion
from mlcx.runtime.openai_api.schemas import ChatCompletionRequest, CompletionRequest
from mlcx.runtime.text.reasoning import resolve_format


class DeltaObserver(Protocol):
    """Sees each delta of a request as it is consumed (the server's latency metrics)."""

    def observe(self, delta: Delta) -> None: ...
    def finish(self) -> None: ...


class _Unobserved:
    def observe(self, delta: Delta) -> None:
        return None

    def finish(self) -> None:
        return None


UNOBSERVED = _Unobserved()


@dataclass(frozen=True)
class OpenedRequest:
    """A request validated and queued: read it once, as a body or as chunks."""

    stream: EngineStream
    plan: GenerationPlan
    fmt: ResponseFormat

    @property
    def streaming(self) -> bool:
        return self.plan.stream

    def abort(self) -> None:
        self.stream.abort_unfinished()

    async def body(self, observer: DeltaObserver = UNOBSERVED) -> dict:
        """The whole response; raises EngineFailedError if the engine failed meanwhile."""
        stream, n = self.stream, self.plan.params.n
        choices = [
            Completion(request_id, index, prompt_ids)
            for request_id, prompt_ids in zip(stream.request_ids, stream.prompt_ids, strict=True)
            for index in range(n)
        ]
        async with stream:
            async for delta in stream:
                observer.observe(delta)
                choices[self._choice(delta)].add(delta)
        observer.finish()
        generated = sum(len(c.token_ids) for c in choices)
        return self.fmt.response(choices, usage(self._prompt_tokens(), generated))

    async def chunks(self, observer: DeltaObserver = UNOBSERVED) -> AsyncIterator[dict]:
        """The stream's chunks, then the usage chunk where the request asked for it;
        raises EngineFailedError if the engine fails meanwhile."""
        generated = 0
        async with self.stream:
            for chunk in self.fmt.start_chunks(self.stream.prompt_ids, self.plan.params.n):
                yield chunk
            async for delta in self.stream:
                observer.observe(delta)
                generated += len(delta.token_ids)
                for chunk in self.fmt.chunks(self._choice(delta), delta):
                    yield chunk
        observer.finish()
        if self.plan.include_usage:
            yield self.fmt.usage_chunk(usage(self._prompt_tokens(), generated))

    def _choice(self, delta: Delta) -> int:
        """Choices are numbered prompt by prompt: prompt p, choice i -> p * n + i."""
        return self.stream.prompt_index(delta) * self.plan.params.n + delta.index

    def _prompt_tokens(self) -> int:
        return sum(len(ids) for ids in self.stream.prompt_ids)


class OpenAIServing:
    def __init__(
        self,
        engine: EngineClient,
        reasoning_format: str = "auto",
        images: ImagePolicy = ANY_DATA_URL,
    ):
        """`reasoning_format`: how chat replies are split where a request does not say."""
        self.engine = engine
        self.reasoning_format = reasoning_format
        self.images = images

    async def open_completion(
        self, body: CompletionRequest, lora: LoraRequest | None = None
    ) -> OpenedRequest:
        plan = plan_completion(body, self.engine.sampling_defaults)
        fmt = CompletionFormat(body.model, self.engine.tokenizer, plan.include_usage)
        return OpenedRequest(await self._start(plan, lora), plan, fmt)

    async def open_chat(
        self, body: ChatCompletionRequest, lora: LoraRequest | None = None
    ) -> OpenedRequest:
        tokenizer = self.engine.tokenizer
        plan = plan_chat(body, self.engine.sampling_defaults, self.reasoning_format)
        reasoning = resolve_format(plan.reasoning_format, tokenizer)
        fmt = ChatFormat(body.model, tokenizer, plan.include_usage, plan.tool_plan, reasoning)
        return OpenedRequest(await self._start(plan, lora), plan, fmt)

    async def _start(self, plan: GenerationPlan, lora: LoraRequest | None) -> EngineStream:
        """Encode the plan's prompts in a worker thread (never on the event loop) and queue
        them: InvalidFieldError naming the field for a prompt that cannot run (or an image
        part that cannot be used), QueueFullError when the engine's queue is full."""
        engine = self.engine
        try:
            if plan.messages is None:
                prompt_ids = await engine.prepare(plan.prompts)
            elif plan.has_images:
                messages = await load_images(plan.messages, self.images)
                ids, images = await engine.prepare_chat_images(messages, plan.tools)
                return await engine.open([ids], plan.params, images=[images], lora=lora)
            else:
                prompt_ids = [await engine.prepare_chat(plan.messages, plan.tools)]
            return await engine.open(prompt_ids, plan.params, lora=lora)
        except QueueFullError:
            raise
        except ValueError as err:
            code = err.code if isinstance(err, InvalidFieldError) else None
            raise bad_request(str(err), _param(err, plan.prompt_field), code) from None


def _param(err: ValueError, prompt_field: str) -> str:
    """The request field `err` is about; the runtime calls every prompt "prompt"."""
    param = err.param if isinstance(err, InvalidFieldError) else None
    return prompt_field if param in (None, "prompt") else param
