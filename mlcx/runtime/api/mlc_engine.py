"""MLC-LLM's MLCEngine in mlcx: the OpenAI API in process, without asyncio.

    engine = MLCEngine("dist/model")
    for chunk in engine.chat.completions.create(messages=[...], stream=True):
        print(chunk.choices[0].delta.content or "", end="")
    engine.terminate()

It is AsyncMLCEngine run on an event loop of its own, in a background thread: one async path
(the server's) rather than a synchronous copy of it. The other way round, an async engine over
a synchronous one, would need a thread per request; this way requests from several threads
share the engine's continuous batch, and closing a stream early aborts its request there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from types import SimpleNamespace
from typing import Any, TypeVar

from mlcx.runtime.api.async_mlc_engine import AsyncMLCEngine, ChunkStream, ModelArg
from mlcx.runtime.core.config import EngineConfig

T = TypeVar("T")


class MLCEngine:
    def __init__(
        self,
        model: ModelArg,
        device: str = "auto",
        engine_config: EngineConfig | None = None,
        **options: Any,
    ):
        """As AsyncMLCEngine (`lora`, `model_name`, `reasoning_format`, `images`,
        `openai_types` among `options`)."""
        self.async_engine = AsyncMLCEngine(model, device, engine_config, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mlcx-mlcengine", daemon=True
        )
        self._thread.start()
        self._closed = False
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create_chat))
        self.completions = SimpleNamespace(create=self._create_completion)
        self.embeddings = SimpleNamespace(create=self._create_embeddings)
        self.models = SimpleNamespace(list=self._list_models)

    @property
    def adapters(self) -> tuple[str, ...]:
        return self.async_engine.models_served.adapters

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            work.close()
            raise RuntimeError("the engine was terminated")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def _answer(self, answer: Any) -> Any:
        return self._iterate(answer) if isinstance(answer, ChunkStream) else answer

    def _iterate(self, stream: ChunkStream) -> Iterator[Any]:
        """The stream's chunks; leaving the loop early aborts the request."""
        try:
            while True:
                try:
                    yield self._run(stream.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            if not self._closed:
                self._run(stream.aclose())

    def _create_chat(self, **kwargs: Any) -> Any:
        """ChatCompletion, or (stream=True) an iterator of ChatCompletionChunk."""
        return self._answer(self._run(self.async_engine.chat.completions.create(**kwargs)))

    def _create_completion(self, **kwargs: Any) -> Any:
        """Completion, or (stream=True) an iterator of Completion chunks."""
        return self._answer(self._run(self.async_engine.completions.create(**kwargs)))

    def _create_embeddings(self, **kwargs: Any) -> Any:
        return self._run(self.async_engine.embeddings.create(**kwargs))

    def _list_models(self) -> Any:
        return self._run(self.async_engine.models.list())

    def terminate(self) -> None:
        """Stop the engine and its loop; idempotent."""
        if self._closed:
            return
        self._run(self.async_engine.close())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> MLCEngine:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.terminate()
