"""The served model: loading in the background so the server answers /health at once, then
ready, or failed with the reason; draining once shutdown has begun."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from mlcx.runtime.api.async_embedder import AsyncEmbedder
from mlcx.runtime.api.async_engine import AsyncEngine
from mlcx.runtime.api.embedder import Embedder
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.stats import EngineStats
from mlcx.server.engine_client import EngineClient
from mlcx.server.errors import SERVER_ERROR, APIError

Served = Engine | EngineClient | Embedder | AsyncEmbedder
EngineSource = Served | Callable[[], Served]
log = logging.getLogger(__name__)


class ModelHost:
    def __init__(self, source: EngineSource, model_name: str | None = None):
        self._loader = source if callable(source) else None
        self._model_name = model_name
        # a generative engine, or an embedding model's (require / require_embedder say which)
        self.engine: EngineClient | AsyncEmbedder | None = None
        self.error: str | None = None
        self.draining = False
        self._loading: asyncio.Task | None = None
        if not callable(source):
            self._adopt(source)

    @property
    def status(self) -> str:
        if self.error is not None:
            return "failed"
        if self.engine is None:
            return "loading"
        return "draining" if self.draining else "ok"

    @property
    def model_names(self) -> tuple[str, ...]:
        """The name /v1/models lists first, then accepted aliases (the artifact folder)."""
        if self.engine is None:
            return (self._model_name,) if self._model_name else ()
        artifact = self.engine.artifact
        names = (self._model_name or artifact.config.model_name, Path(artifact.path).name)
        return tuple(dict.fromkeys(names))

    async def replica_stats(self) -> dict[str, EngineStats]:
        """Stats of each engine by replica label; none while loading."""
        return {} if self.engine is None else await self.engine.replica_stats()

    def start(self) -> None:
        """Begin loading (in a thread) if the source is a loader."""
        if self._loader is not None and self.engine is None and self._loading is None:
            self._loading = asyncio.create_task(self._load())

    async def stop(self) -> None:
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        if self.engine is not None:
            await self.engine.close()

    def require(self, model: str) -> EngineClient:
        """The engine for a request naming `model`: 503 unless ready, 404 for another name,
        400 where the served model embeds and cannot generate."""
        served = self._ready(model)
        if isinstance(served, AsyncEmbedder):
            raise APIError(
                400,
                f"the model {model!r} is an embedding model: it answers POST /v1/embeddings, "
                "not text generation",
                param="model",
                code="model_not_generative",
            )
        return served

    def require_embedder(self, model: str) -> AsyncEmbedder:
        """Like `require`, for /v1/embeddings: 400 where the served model generates text."""
        served = self._ready(model)
        if not isinstance(served, AsyncEmbedder):
            raise APIError(
                400,
                f"the model {model!r} generates text and has no embeddings; serve an embedding "
                "model artifact (BERT, Qwen3-Embedding) for /v1/embeddings",
                param="model",
                code="model_not_embedding",
            )
        return served

    def _ready(self, model: str) -> EngineClient | AsyncEmbedder:
        if self.engine is None or self.draining:
            reason = {
                "loading": "the model is still loading; retry when GET /health returns 200",
                "failed": f"the model failed to load: {self.error}",
                "draining": "the server is shutting down",
            }[self.status]
            raise APIError(503, reason, SERVER_ERROR, code=f"model_{self.status}")
        if model not in self.model_names:
            raise APIError(
                404,
                f"the model {model!r} does not exist; this server serves "
                f"{self.model_names[0]!r} (see GET /v1/models)",
                param="model",
                code="model_not_found",
            )
        return self.engine

    def _adopt(self, served: Served) -> None:
        if isinstance(served, Engine):
            self.engine = AsyncEngine(served)
        elif isinstance(served, Embedder):
            self.engine = AsyncEmbedder(served)
        else:
            self.engine = served

    async def _load(self) -> None:
        try:
            self._adopt(await asyncio.to_thread(self._loader))
        except Exception as err:  # reported by /health; the server stays up to say so
            log.exception("loading the model failed")
            self.error = str(err) or type(err).__name__
