"""How many concurrent sequences of a given length a KV memory budget holds.

Counts what the engine allocates: whole blocks of page_size tokens across all layers
(`ArtifactConfig.kv_block_bytes`: an int8 cache's bytes include its row scales), and a
sequence holds ceil(tokens / page_size) blocks of its own (no shared prefix).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlcx.artifact.config import ArtifactConfig


@dataclass(frozen=True)
class KVCapacity:
    cache_dtype: str
    budget_bytes: int
    block_bytes: int  # one block of page_size tokens, all layers
    blocks: int
    seq_tokens: int
    sequences: int  # of seq_tokens each, at once

    def line(self) -> str:
        return (
            f"KV cache {self.cache_dtype}: {self.budget_bytes / 2**20:.0f} MiB = {self.blocks} "
            f"blocks of {self.block_bytes} bytes; {self.sequences} concurrent "
            f"{self.seq_tokens}-token sequences fit"
        )


def kv_capacity(config: ArtifactConfig, budget_bytes: int, seq_tokens: int) -> KVCapacity:
    if budget_bytes < 1 or seq_tokens < 1:
        raise ValueError(
            f"budget and sequence length must be positive, got {budget_bytes}, {seq_tokens}"
        )
    block = config.kv_block_bytes
    blocks = budget_bytes // block
    per_seq = math.ceil(seq_tokens / config.page_size)
    return KVCapacity(
        config.cache_dtype, budget_bytes, block, blocks, seq_tokens, blocks // per_seq
    )
