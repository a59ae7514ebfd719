"""The Python API of an embedding artifact: texts (or token ids) in, one vector each out.

    embedder = Embedder("dist/bge-small")
    vectors = embedder.embed(["a query", "a passage"])  # float32 [2, hidden]

Texts are tokenized with the tokenizer's own post-processor (BERT's [CLS] ... [SEP],
Qwen3-Embedding's trailing <|endoftext|>), as sentence-transformers does; a text longer than
the model's positions is refused, not truncated. Texts are sorted by length and run in
batches of similar lengths, so padding costs little.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlcx.artifact.embedding_config import EmbeddingArtifact
from mlcx.errors import InvalidFieldError
from mlcx.runtime.backends.embed_batch import EmbedBatch
from mlcx.runtime.backends.embed_runner import EmbedRunner
from mlcx.runtime.backends.wgpu_embed import WgpuEmbedRunner
from mlcx.runtime.text.tokenizer import Tokenizer

EmbedInput = str | Sequence[int]
# the artifact's runtime -> what runs its `embed` (a webgpu artifact runs natively on wgpu)
RUNNERS = {"tvm": EmbedRunner, "wgpu": WgpuEmbedRunner}


@dataclass(frozen=True)
class EmbedLimits:
    max_batch: int = 8  # texts per call (bigger batches measured no faster on cpu)
    max_batch_tokens: int = 4096  # texts x padded length per call

    def __post_init__(self) -> None:
        if self.max_batch < 1 or self.max_batch_tokens < 1:
            raise ValueError("max_batch and max_batch_tokens must be positive")


class Embedder:
    def __init__(
        self, artifact: EmbeddingArtifact | str | Path, limits: EmbedLimits = EmbedLimits()
    ):
        self.artifact = (
            artifact if isinstance(artifact, EmbeddingArtifact) else EmbeddingArtifact(artifact)
        )
        self.config = self.artifact.config
        self.tokenizer = Tokenizer.from_dir(self.artifact.path)
        self.runner = RUNNERS[self.config.runtime](self.artifact)
        self.limits = limits

    @property
    def max_tokens(self) -> int:
        return self.config.max_tokens

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise InvalidFieldError(f"expected a string, got {type(text).__name__}", "input")
        return self.tokenizer.backend.encode(text, add_special_tokens=True).ids

    def prepare(self, inputs: Sequence[EmbedInput]) -> list[list[int]]:
        """Token ids of each input, checked against the model's limits (InvalidFieldError)."""
        if isinstance(inputs, str) or not inputs:
            raise InvalidFieldError(
                "input must be a non-empty list of texts or token lists", "input"
            )
        empty = [i for i, x in enumerate(inputs) if isinstance(x, str) and not x]
        if empty:  # it would embed the special tokens alone, as OpenAI's API refuses to
            raise InvalidFieldError(f"input[{empty[0]}] is an empty string", "input")
        prompts = [self.encode(x) if isinstance(x, str) else list(x) for x in inputs]
        for index, ids in enumerate(prompts):
            self._check(index, ids)
        return prompts

    def _check(self, index: int, ids: list[int]) -> None:
        vocab = self.tokenizer.vocab_size
        if not ids:
            raise InvalidFieldError(f"input[{index}] is empty", "input")
        if len(ids) > self.max_tokens:
            raise InvalidFieldError(
                f"input[{index}] has {len(ids)} tokens; this model takes at most "
                f"{self.max_tokens} tokens per input",
                "input",
            )
        if any(not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < vocab for t in ids):
            raise InvalidFieldError(f"input[{index}] has token ids outside [0, {vocab})", "input")

    def check_dimensions(self, dimensions: int | None) -> None:
        if dimensions is None:
            return
        hidden = self.config.hidden_size
        if not self.config.pooling.matryoshka:
            raise InvalidFieldError(
                f"this model ({self.config.model_name}) was not trained for truncated "
                "embeddings; leave dimensions out",
                "dimensions",
            )
        if not 1 <= dimensions <= hidden:
            raise InvalidFieldError(
                f"dimensions must be in [1, {hidden}], not {dimensions}", "dimensions"
            )

    def embed(self, inputs: Sequence[EmbedInput], dimensions: int | None = None) -> np.ndarray:
        """float32 [len(inputs), dimensions or hidden]; unit length where the model's are."""
        self.check_dimensions(dimensions)
        return self.embed_ids(self.prepare(inputs), dimensions)

    def embed_ids(self, prompts: list[list[int]], dimensions: int | None = None) -> np.ndarray:
        """Like `embed`, for token lists `prepare` has checked."""
        out = np.empty((len(prompts), self.config.hidden_size), dtype=np.float32)
        for rows in self._batches(prompts):
            batch = EmbedBatch.build([prompts[r] for r in rows], self.config.pooling.mode)
            out[rows] = self.runner.run(batch)
        if dimensions is not None:
            out = out[:, :dimensions]
        return _unit(out) if self.config.pooling.normalize else out

    def _batches(self, prompts: list[list[int]]) -> list[list[int]]:
        """Row indices per call, shortest texts first; each within the batch limits."""
        order = sorted(range(len(prompts)), key=lambda r: len(prompts[r]))
        batches: list[list[int]] = [[]]
        for row in order:
            current = batches[-1]
            # sorted: this row is the longest of the batch it joins, so it sets the padding
            padded = (len(current) + 1) * len(prompts[row])
            if current and (
                len(current) >= self.limits.max_batch or padded > self.limits.max_batch_tokens
            ):
                batches.append([row])
            else:
                current.append(row)
        return [rows for rows in batches if rows]


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
