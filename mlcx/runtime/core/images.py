"""Images inside a prompt, as the scheduler and the engine see them: the positions of each
image's tokens and the embedding rows that replace them.

Three rules follow from Gemma 3's mask (every image token sees its whole image):
- a step never cuts an image: its tokens not yet cached are prefilled in one step;
- the prefix cache keys an image's tokens by the image's content hash (its tokens are all the
  same id), so a cached block is reused only for the same image at the same place;
- each image token is a row of its own that sees the keys up to its image's end
  (runtime.kv.page_tables.span_steps), the rows' embeddings replaced by the image's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class PromptImage:
    start: int  # position of the image's first token
    rows: np.ndarray  # float32 [tokens, hidden]
    digest: bytes  # content hash (sha256 of the pixels)
    grid: tuple[int, int] | None = None  # (rows, columns) of merged tokens (M-RoPE models)

    @property
    def end(self) -> int:
        return self.start + len(self.rows)

    @property
    def cache_id(self) -> int:
        """What the prefix cache hashes in place of each of the image's token ids: negative,
        so it never equals a real token id."""
        return -1 - int.from_bytes(self.digest[:7], "big")


def image_runs(token_ids: Sequence[int], image_token_id: int) -> list[tuple[int, int]]:
    """[start, end) of each run of image tokens in a prompt."""
    runs: list[tuple[int, int]] = []
    for i, token in enumerate(token_ids):
        if token != image_token_id:
            continue
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def cache_ids(token_ids: Sequence[int], images: Sequence[PromptImage]) -> list[int]:
    """The ids the prefix cache hashes: image tokens replaced by their image's cache id."""
    if not images:
        return list(token_ids)
    ids = list(token_ids)
    for image in images:
        ids[image.start : image.end] = [image.cache_id] * (image.end - image.start)
    return ids


def chunk_tokens(images: Sequence[PromptImage], computed: int, n: int) -> int:
    """The most of `n` tokens from `computed` a step may take without cutting an image: the
    chunk stops before an image it cannot hold whole; 0 where it starts in such an image."""
    end = computed + n
    for image in images:
        if image.start < end < image.end:
            return max(image.start - computed, 0)
    return n


def step_images(
    images: Sequence[PromptImage], first: int, count: int, row0: int
) -> tuple[list[tuple[int, int]], list[tuple[int, np.ndarray]]]:
    """For a step computing positions first .. first + count - 1 at rows row0 ..: the image
    spans it touches, and (row of the step, image rows) for each image's new tokens."""
    spans, rows = [], []
    for image in images:
        lo, hi = max(image.start, first), min(image.end, first + count)
        if lo < hi:
            spans.append((image.start, image.end))
            rows.append((row0 + lo - first, image.rows[lo - image.start : hi - image.start]))
    return spans, rows
