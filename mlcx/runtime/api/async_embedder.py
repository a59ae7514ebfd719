"""An Embedder shared by a server's requests: each request's inputs run as batches in a worker
thread, one request at a time (the compiled function already uses every core), so the event
loop keeps answering meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlcx.artifact.embedding_config import EmbeddingArtifact
from mlcx.runtime.api.embedder import Embedder, EmbedInput
from mlcx.runtime.core.stats import EngineStats


@dataclass(frozen=True)
class Embeddings:
    vectors: np.ndarray  # float32 [inputs, dimensions]
    prompt_tokens: int


class AsyncEmbedder:
    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self._lock = asyncio.Lock()

    @property
    def artifact(self) -> EmbeddingArtifact:
        return self.embedder.artifact

    async def embed(self, inputs: Sequence[EmbedInput], dimensions: int | None) -> Embeddings:
        """Raises InvalidFieldError (a ValueError) for inputs the model cannot take."""
        self.embedder.check_dimensions(dimensions)
        prompts = self.embedder.prepare(inputs)
        async with self._lock:
            vectors = await asyncio.to_thread(self.embedder.embed_ids, prompts, dimensions)
        return Embeddings(vectors, sum(len(p) for p in prompts))

    async def replica_stats(self) -> dict[str, EngineStats]:
        return {}  # no generation engine: nothing for the engine metrics

    async def close(self) -> None:
        return None
