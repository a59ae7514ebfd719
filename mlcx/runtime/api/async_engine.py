"""The one async path into the engine, shared by every asyncio front door (the REST server).

A worker thread calls `Engine.step()` while there is work and hands each step's deltas to the
event loop with `loop.call_soon_threadsafe`; the loop routes them to the `RequestStream` of
their request. Requests and aborts go through the engine's thread-safe inbox, so only the
worker touches the scheduler and the KV cache, and the loop never waits on a model step.

    [ids] = await engine.prepare([prompt])     # encodes in a thread, not on the loop
    stream = engine.submit([ids], params)      # validates now: raises ValueError & co.
    async with stream:                         # exit aborts what is unfinished
        async for delta in stream: ...
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from PIL import Image

from mlcx.artifact.config import Artifact
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.outputs import Delta
from mlcx.runtime.core.stats import EngineStats
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.tokenizer import Tokenizer
from mlcx.runtime.vision.prompt import chat_with_images

Prompt = str | list[int]
log = logging.getLogger(__name__)


class EngineFailedError(RuntimeError):
    """A model step raised; every request that was in flight fails with this error."""


class RequestStream:
    """The deltas of one API request: one engine request per prompt, `n` choices each.

    Iterate it for deltas of all its choices (interleaved) until every choice has finished.
    """

    def __init__(self, owner: AsyncEngine, request_ids: list[str], n: int):
        self._owner = owner
        self.request_ids = request_ids
        self.prompt_ids: list[list[int]] = []
        self._index = {request_id: i for i, request_id in enumerate(request_ids)}
        self._open = dict.fromkeys(request_ids, n)  # request id -> choices not finished
        self._queue: asyncio.Queue[Delta | BaseException] = asyncio.Queue()

    def prompt_index(self, delta: Delta) -> int:
        """Which of the submitted prompts a delta belongs to."""
        return self._index[delta.request_id]

    @property
    def finished(self) -> bool:
        return not self._open

    def __aiter__(self) -> RequestStream:
        return self

    async def __anext__(self) -> Delta:
        if not self._open:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, BaseException):
            raise item
        if item.finished:
            self._open[item.request_id] -= 1
            if not self._open[item.request_id]:
                del self._open[item.request_id]
                self._owner._forget(item.request_id)
        return item

    def abort_unfinished(self) -> None:
        """Abort every choice that has not finished; idempotent.

        This is the cancellation cleanup: a client that disconnects, a cancelled task or an
        error while streaming all leave through here. Without it the engine would keep
        decoding for nobody and hold the request's KV blocks until max_tokens.
        """
        for request_id in list(self._open):
            self._owner._forget(request_id)
            self._owner.engine.abort(request_id)
        self._open.clear()
        self._owner._wake.set()

    async def __aenter__(self) -> RequestStream:
        return self

    async def __aexit__(self, *exc_info) -> None:
        self.abort_unfinished()

    def _put(self, item: Delta | BaseException) -> None:
        self._queue.put_nowait(item)


class AsyncEngine:
    def __init__(self, engine: Engine):
        self.engine = engine
        self._streams: dict[str, RequestStream] = {}  # touched on the loop thread only
        self._ids = itertools.count()
        self._wake = threading.Event()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- loop side ------------------------------------------------------------------------
    @property
    def stats(self) -> EngineStats:
        """As of the current step's schedule, or the last step's end."""
        return self.engine.snapshot

    @property
    def artifact(self) -> Artifact:
        return self.engine.artifact

    @property
    def tokenizer(self) -> Tokenizer:
        return self.engine.tokenizer

    @property
    def sampling_defaults(self) -> Mapping[str, Any]:
        """The model's sampling defaults, for `SamplingParams.with_defaults`."""
        return self.engine.artifact.config.sampling

    @property
    def adapters(self) -> tuple[str, ...]:
        """The LoRA adapters a request may pick."""
        return self.engine.lora.names

    async def prepare(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        """Token ids of each prompt: text encoded, ids checked against the vocabulary."""
        return await self.engine.prompts.prepare(prompts)

    async def prepare_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """Token ids of a conversation (and the tools it may call) in the model's chat
        template, ready for the reply."""
        return await self.engine.prompts.prepare_chat(messages, tools)

    async def prepare_chat_images(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> tuple[list[int], list[Image.Image]]:
        """Token ids and images of a conversation whose messages hold decoded image parts
        (runtime.vision.prompt), in a worker thread."""
        config = self.engine.images.config
        return await asyncio.to_thread(
            chat_with_images, self.engine.prompts, config, messages, tools
        )

    async def prepare_constraint(self, params: SamplingParams) -> None:
        """Compile `params.constraint` in a worker thread (a large schema takes a while), so
        that `submit` finds it compiled; raises the InvalidFieldError `submit` would."""
        if params.constraint is not None:
            await asyncio.to_thread(self.engine.constraints.compile, params.constraint)

    async def open(
        self,
        prompts: Sequence[Prompt],
        params: SamplingParams,
        request_id: str | None = None,
        images: Sequence[Sequence[Image.Image]] | None = None,
        lora: LoraRequest | None = None,
    ) -> RequestStream:
        """`submit`, as the OpenAI layer's engine client (`mlcx.runtime.openai_api.
        engine_client`) calls it."""
        return self.submit(prompts, params, request_id, images, lora)

    async def replica_stats(self) -> dict[str, EngineStats]:
        """The stats of each engine behind this client: one, unlabelled."""
        return {"": self.stats}

    def submit(
        self,
        prompts: Sequence[Prompt],
        params: SamplingParams,
        request_id: str | None = None,
        images: Sequence[Sequence[Image.Image]] | None = None,
        lora: LoraRequest | None = None,
    ) -> RequestStream:
        """Validate and queue one engine request per prompt (all or none are queued).

        Pass token ids from `prepare`, after `prepare_constraint`: text is encoded, and a
        constraint not yet compiled is compiled, on the calling thread. `request_id` names
        the request (a front that retries on another engine keeps its ids); default: a fresh id.
        `images[i]`: the images of prompt i (one per run of image tokens in it); `lora`: the
        adapter every prompt runs with (None: the base model).
        """
        self._ensure_started()
        base = request_id or f"req-{next(self._ids)}"
        ids = [f"{base}-{i}" for i in range(len(prompts))] if len(prompts) > 1 else [base]
        stream = RequestStream(self, ids, params.n)
        try:
            for i, (request_id, prompt) in enumerate(zip(ids, prompts, strict=True)):
                given = images[i] if images else ()
                prompt_ids = self.engine.add_request(request_id, prompt, params, given, lora)
                stream.prompt_ids.append(prompt_ids)
                self._streams[request_id] = stream
        except BaseException:
            stream.abort_unfinished()
            raise
        self._wake.set()
        return stream

    async def generate(self, prompt: Prompt, params: SamplingParams) -> AsyncIterator[Delta]:
        """Deltas of one prompt; leaving the loop early aborts the request."""
        [prompt_ids] = await self.prepare([prompt])
        await self.prepare_constraint(params)
        async with self.submit([prompt_ids], params) as stream:
            async for delta in stream:
                yield delta

    async def close(self) -> None:
        """Stop the worker; requests still in flight fail with EngineFailedError."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        self._fail_all("the engine was shut down")

    def shutdown(self) -> None:
        """`close` for a caller that cannot await (MLC's `terminate()`): waits for the worker
        to finish its step; requests in flight fail on their loop."""
        self._closed = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._loop is not None:
            _post(self._loop, self._fail_all, "the engine was shut down")

    def _ensure_started(self) -> None:
        if self._closed:
            raise EngineFailedError("the engine was shut down")
        if self._thread is None:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.Thread(
                target=self._run, args=(self._loop,), name="mlcx-engine", daemon=True
            )
            self._thread.start()

    def _forget(self, request_id: str) -> None:
        self._streams.pop(request_id, None)

    def _dispatch(self, deltas: list[Delta]) -> None:
        for delta in deltas:
            stream = self._streams.get(delta.request_id)
            if stream is not None:
                stream._put(delta)

    def _fail_all(self, message: str) -> None:
        for stream in set(self._streams.values()):
            stream._put(EngineFailedError(message))

    # -- worker thread --------------------------------------------------------------------
    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self._closed:
            self._wake.clear()
            if not self.engine.has_work():
                self._wake.wait()
                continue
            try:
                deltas = self.engine.step()
            except Exception as err:  # a broken step must not take the server down
                log.exception("engine step failed; failing the requests in flight")
                for request_id in self.engine.request_ids():
                    self.engine.abort(request_id)
                _post(loop, self._fail_all, f"the engine failed: {err}")
                deltas = []
            if deltas and not _post(loop, self._dispatch, deltas):
                return


def _post(loop: asyncio.AbstractEventLoop, callback, argument) -> bool:
    """Run `callback(argument)` on the loop; False once the loop is closed."""
    try:
        loop.call_soon_threadsafe(callback, argument)
    except RuntimeError:  # the loop was closed under a running worker
        return False
    return True
