"""Embedding batch vectors for the browser runtime (web/test/vectors/embed_batch.json): ragged
token lists through the Python Embedder's batching (shortest first, within the text and token
limits) and each batch through EmbedBatch (the `embed` plan's padded inputs, per pooling mode).
web/test/vectors.test.mjs holds web/src/embedding_batch.js to them."""

from __future__ import annotations

from mlcx.runtime.api.embedder import Embedder, EmbedLimits
from mlcx.runtime.backends.embed_batch import EmbedBatch

PROMPTS = [[5, 6, 7], [9], [1, 2, 3, 4, 5, 6], [8, 8], [3, 1, 4, 1, 5], [2, 7]]
LIMITS = EmbedLimits(max_batch=3, max_batch_tokens=12)


def _batches(prompts: list[list[int]], limits: EmbedLimits) -> list[list[int]]:
    """Embedder's own grouping, without loading an artifact (it reads only the limits)."""
    embedder = object.__new__(Embedder)
    embedder.limits = limits
    return embedder._batches(prompts)


def embed_vectors() -> dict:
    batches = _batches(PROMPTS, LIMITS)
    arrays = {}
    for mode in ("mean", "cls", "last"):
        built = [EmbedBatch.build([PROMPTS[r] for r in rows], mode) for rows in batches]
        names = ("input_ids", "positions", "rows", "mask", "pool")
        arrays[mode] = [
            {name: a.tolist() for name, a in zip(names, b.arrays(), strict=True)} for b in built
        ]
    limits = {"max_batch": LIMITS.max_batch, "max_batch_tokens": LIMITS.max_batch_tokens}
    return {"prompts": PROMPTS, "limits": limits, "batches": batches, "arrays": arrays}
