"""The served model: loading in the background so the server answers /health at once, then
ready (an AsyncMLCEngine, which every route talks to), or failed with the reason; draining once
shutdown has begun."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from mlcx.runtime.api.async_embedder import AsyncEmbedder
from mlcx.runtime.api.async_mlc_engine import AsyncMLCEngine
from mlcx.runtime.api.embedder import Embedder
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.stats import EngineStats
from mlcx.runtime.openai_api.engine_client import EngineClient
from mlcx.server.errors import SERVER_ERROR, APIError

Served = Engine | EngineClient | Embedder | AsyncEmbedder | AsyncMLCEngine
EngineSource = Served | Callable[[], Served]
log = logging.getLogger(__name__)


class ModelHost:
    def __init__(self, source: EngineSource, model_name: str | None = None, make=AsyncMLCEngine):
        """`make(served, model_name=...)`: the AsyncMLCEngine of what the source gives."""
        self._loader = source if callable(source) else None
        self._model_name = model_name
        self._make = make
        self.engine: AsyncMLCEngine | None = None
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

    def model_cards(self) -> list[dict]:
        """/v1/models' data: the model and its adapters; the configured name while loading."""
        if self.engine is not None:
            return self.engine.model_cards()
        name = self._model_name
        return [{"id": name, "object": "model", "created": 0, "owned_by": "mlcx"}] if name else []

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

    def require(self) -> AsyncMLCEngine:
        """The engine, once ready: 503 while loading, failed or draining."""
        if self.engine is None or self.draining:
            reason = {
                "loading": "the model is still loading; retry when GET /health returns 200",
                "failed": f"the model failed to load: {self.error}",
                "draining": "the server is shutting down",
            }[self.status]
            raise APIError(503, reason, SERVER_ERROR, code=f"model_{self.status}")
        return self.engine

    def _adopt(self, served: Served) -> None:
        if isinstance(served, AsyncMLCEngine):
            self.engine = served
        else:
            self.engine = self._make(served, model_name=self._model_name)

    async def _load(self) -> None:
        try:
            self._adopt(await asyncio.to_thread(self._loader))
        except Exception as err:  # reported by /health; the server stays up to say so
            log.exception("loading the model failed")
            self.error = str(err) or type(err).__name__
