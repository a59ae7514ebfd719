"""The padded inputs of one `embed` call (mlcx.frontends.nn.embedding_model), built from
ragged token lists: texts right-padded, positions counted from 0 in each text, and each
token's share of its text's vector by the pooling mode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


def _mean(length: int) -> np.ndarray:
    return np.full(length, 1.0 / length, dtype=np.float32)


def _one_hot(length: int, index: int) -> np.ndarray:
    weights = np.zeros(length, dtype=np.float32)
    weights[index] = 1.0
    return weights


# a text's pooling weights over its own tokens, by PoolingConfig.mode
POOL_WEIGHTS: dict[str, Callable[[int], np.ndarray]] = {
    "mean": _mean,
    "cls": lambda length: _one_hot(length, 0),
    "last": lambda length: _one_hot(length, length - 1),
}


@dataclass(frozen=True)
class EmbedBatch:
    input_ids: np.ndarray  # [batch, seq] int32, 0 past each text
    positions: np.ndarray  # [batch, seq] int32
    mask: np.ndarray  # [batch, seq] float32: 1 for a text's tokens
    pool: np.ndarray  # [batch, seq] float32

    @classmethod
    def build(cls, prompts: Sequence[Sequence[int]], mode: str) -> EmbedBatch:
        batch, seq = len(prompts), max(len(p) for p in prompts)
        ids = np.zeros((batch, seq), dtype=np.int32)
        mask = np.zeros((batch, seq), dtype=np.float32)
        pool = np.zeros((batch, seq), dtype=np.float32)
        for row, prompt in enumerate(prompts):
            ids[row, : len(prompt)] = prompt
            mask[row, : len(prompt)] = 1.0
            pool[row, : len(prompt)] = POOL_WEIGHTS[mode](len(prompt))
        positions = np.broadcast_to(np.arange(seq, dtype=np.int32), (batch, seq)).copy()
        return cls(ids, positions, mask, pool)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """In the exported function's order (EMBED_INPUTS); ids and positions flattened
        row-major, as the graph reads them."""
        batch, seq = self.input_ids.shape
        rows = np.repeat(np.arange(batch, dtype=np.int32), seq)
        return self.input_ids.reshape(-1), self.positions.reshape(-1), rows, self.mask, self.pool
