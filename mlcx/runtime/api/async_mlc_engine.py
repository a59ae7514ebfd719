"""MLC-LLM's AsyncMLCEngine in mlcx: the OpenAI API in process, on asyncio.

    engine = AsyncMLCEngine("dist/model")                 # or a model, compiled on first use
    reply = await engine.chat.completions.create(messages=[...])
    async for chunk in await engine.chat.completions.create(messages=[...], stream=True): ...
    engine.terminate()

Every request runs the OpenAI layer's one path (mlcx.runtime.openai_api.serving): the REST
server is this engine behind HTTP (its routes call `open_chat`, `open_completion`,
`create_embeddings` and `model_cards` with the bodies they parsed), so a request gets the same
validation, defaults, errors and answer either way. Responses are the `openai` package's types
(plain dataclasses of the same fields without it: response_types.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mlcx.errors import InvalidFieldError
from mlcx.runtime.api.async_embedder import AsyncEmbedder
from mlcx.runtime.api.async_engine import AsyncEngine
from mlcx.runtime.api.embedder import Embedder
from mlcx.runtime.api.loading import Adapters, open_model
from mlcx.runtime.api.request_args import request_body
from mlcx.runtime.api.response_types import typed
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.stats import EngineStats
from mlcx.runtime.openai_api.embeddings import EmbeddingRequest, create_embeddings
from mlcx.runtime.openai_api.engine_client import EngineClient
from mlcx.runtime.openai_api.image_parts import ANY_DATA_URL, ImagePolicy
from mlcx.runtime.openai_api.models import ServedModels, model_names
from mlcx.runtime.openai_api.schemas import ChatCompletionRequest, CompletionRequest
from mlcx.runtime.openai_api.serving import OpenAIServing, OpenedRequest

ModelArg = str | Path | Engine | Embedder | EngineClient | AsyncEmbedder


class ChunkStream:
    """The typed chunks of a streamed request; closing (or dropping) it aborts the rest."""

    def __init__(self, opened: OpenedRequest, convert: Callable[[dict], Any]):
        self._opened = opened
        self._chunks = opened.chunks()
        self._convert = convert

    def __aiter__(self) -> ChunkStream:
        return self

    async def __anext__(self) -> Any:
        return self._convert(await self._chunks.__anext__())

    async def aclose(self) -> None:
        await self._chunks.aclose()
        self._opened.abort()

    def __del__(self) -> None:
        self._opened.abort()


def _served(model: ModelArg, device, config, lora) -> EngineClient | AsyncEmbedder:
    if isinstance(model, str | Path):
        model = open_model(model, device, config, lora)
    elif lora:
        raise ValueError("lora= loads adapters into a model it opens; give the model's path")
    if isinstance(model, Engine):
        return AsyncEngine(model)
    if isinstance(model, Embedder):
        return AsyncEmbedder(model)
    return model


class AsyncMLCEngine:
    def __init__(
        self,
        model: ModelArg,
        device: str = "auto",
        engine_config: EngineConfig | None = None,
        *,
        lora: Adapters | None = None,
        model_name: str | None = None,
        reasoning_format: str = "auto",
        images: ImagePolicy = ANY_DATA_URL,
        openai_types: bool = True,
    ):
        """`model`: an artifact directory or a model to compile (a preset, a Hugging Face
        folder, a .gguf), or an engine already made. `lora`: {name: PEFT folder or GGUF
        adapter}; a request picks one with model="<name>:<adapter>" or extra_body={"lora": ...}.
        `model_name`: the name responses carry (default: the model's). `openai_types`: False
        returns the plain dataclasses even where `openai` is installed."""
        self.served = _served(model, device, engine_config, lora)
        artifact = self.served.artifact
        aliases = [Path(artifact.path).name]
        if isinstance(model, str | Path):
            aliases.append(str(model))
        names = model_names(model_name, artifact.config.model_name, aliases)
        adapters = () if isinstance(self.served, AsyncEmbedder) else self.served.adapters
        self.models_served = ServedModels(names, adapters)
        self._serving = None
        if not isinstance(self.served, AsyncEmbedder):
            self._serving = OpenAIServing(self.served, reasoning_format, images)
        self._openai_types = openai_types
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create_chat))
        self.completions = SimpleNamespace(create=self._create_completion)
        self.embeddings = SimpleNamespace(create=self._create_embeddings)
        self.models = SimpleNamespace(list=self._list_models)

    # -- the JSON level: what the REST server calls ---------------------------------------
    async def open_chat(self, body: ChatCompletionRequest) -> OpenedRequest:
        lora = self.models_served.resolve(body.model, body.lora)
        return await self._generative(body.model).open_chat(body, lora)

    async def open_completion(self, body: CompletionRequest) -> OpenedRequest:
        lora = self.models_served.resolve(body.model, body.lora)
        return await self._generative(body.model).open_completion(body, lora)

    async def create_embeddings(self, body: EmbeddingRequest) -> dict:
        self.models_served.resolve(body.model)
        if not isinstance(self.served, AsyncEmbedder):
            raise InvalidFieldError(
                f"the model {body.model!r} generates text and has no embeddings; serve an "
                "embedding model artifact (BERT, Qwen3-Embedding) for /v1/embeddings",
                "model",
                "model_not_embedding",
            )
        return await create_embeddings(self.served, body)

    def model_cards(self) -> list[dict]:
        return self.models_served.cards()

    async def replica_stats(self) -> dict[str, EngineStats]:
        return await self.served.replica_stats()

    def _generative(self, model: str) -> OpenAIServing:
        if self._serving is None:
            raise InvalidFieldError(
                f"the model {model!r} is an embedding model: it answers POST /v1/embeddings, "
                "not text generation",
                "model",
                "model_not_generative",
            )
        return self._serving

    # -- the OpenAI client's shape ---------------------------------------------------------
    def _typed(self, kind: str, body: dict) -> Any:
        return typed(kind, body, self._openai_types)

    async def _answer(self, opened: OpenedRequest, kind: str, chunk_kind: str) -> Any:
        if opened.streaming:
            return ChunkStream(opened, lambda chunk: self._typed(chunk_kind, chunk))
        return self._typed(kind, await opened.body())

    async def _create_chat(self, **kwargs: Any) -> Any:
        """ChatCompletion, or (stream=True) an async iterator of ChatCompletionChunk."""
        body = request_body(ChatCompletionRequest, kwargs, self.models_served.name)
        return await self._answer(await self.open_chat(body), "chat", "chat_chunk")

    async def _create_completion(self, **kwargs: Any) -> Any:
        """Completion, or (stream=True) an async iterator of Completion chunks."""
        body = request_body(CompletionRequest, kwargs, self.models_served.name)
        opened = await self.open_completion(body)
        return await self._answer(opened, "completion", "completion")

    async def _create_embeddings(self, **kwargs: Any) -> Any:
        body = request_body(EmbeddingRequest, kwargs, self.models_served.name)
        return self._typed("embeddings", await self.create_embeddings(body))

    async def _list_models(self) -> Any:
        return self._typed("models", {"object": "list", "data": self.model_cards()})

    # -- lifetime ------------------------------------------------------------------------
    async def close(self) -> None:
        """Stop the engine; requests in flight fail with EngineFailedError."""
        await self.served.close()

    def terminate(self) -> None:
        """`close` without awaiting (MLC-LLM's name), for the end of a script."""
        shutdown = getattr(self.served, "shutdown", None)
        if shutdown is not None:
            shutdown()

    async def __aenter__(self) -> AsyncMLCEngine:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()
