"""`mlcx bench embed`: texts per second of an embedding artifact.

The workload is fixed token-id lists (seeded, in the vocabulary, `tokens` long each), so the
number measures the compiled model and batching, not the tokenizer; the median of `reps`
timed runs after one warm-up run. No peer is run (see docs/embeddings.md).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np

from mlcx.runtime.api.embedder import Embedder, EmbedLimits


@dataclass(frozen=True)
class EmbedBenchSpec:
    texts: int = 256
    tokens: int = 128  # per text; at most the model's limit
    batch: int = 8
    reps: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("texts", "tokens", "batch", "reps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")


@dataclass(frozen=True)
class EmbedBenchReport:
    model: str
    artifact: str
    target: str
    texts: int
    tokens_per_text: int
    batch: int
    seconds: list[float]  # of each timed run

    @property
    def texts_per_second(self) -> float:
        return self.texts / statistics.median(self.seconds)

    @property
    def tokens_per_second(self) -> float:
        return self.texts_per_second * self.tokens_per_text

    def to_dict(self) -> dict:
        data = asdict(self)
        data["texts_per_second"] = self.texts_per_second
        data["tokens_per_second"] = self.tokens_per_second
        return data

    def lines(self) -> list[str]:
        return [
            f"{self.model} ({self.target}): {self.texts} texts x {self.tokens_per_text} tokens, "
            f"batches of {self.batch}",
            f"  {self.texts_per_second:.1f} texts/s  ({self.tokens_per_second:.0f} tokens/s, "
            f"median of {len(self.seconds)})",
        ]


def _workload(embedder: Embedder, spec: EmbedBenchSpec) -> list[list[int]]:
    if spec.tokens > embedder.max_tokens:
        raise ValueError(
            f"--tokens {spec.tokens} is past the model's limit of {embedder.max_tokens} tokens"
        )
    rng = np.random.default_rng(spec.seed)
    ids = rng.integers(0, embedder.tokenizer.vocab_size, size=(spec.texts, spec.tokens))
    return ids.tolist()


def run_embed_bench(artifact, spec: EmbedBenchSpec) -> EmbedBenchReport:
    embedder = Embedder(artifact, EmbedLimits(max_batch=spec.batch))
    prompts = _workload(embedder, spec)
    embedder.embed_ids(prompts[: spec.batch])  # warm-up: first-call allocations
    seconds = []
    for _ in range(spec.reps):
        started = time.perf_counter()
        embedder.embed_ids(prompts)
        seconds.append(time.perf_counter() - started)
    config = embedder.config
    return EmbedBenchReport(
        config.model_name,
        str(embedder.artifact.path),
        config.target,
        spec.texts,
        spec.tokens,
        spec.batch,
        seconds,
    )
