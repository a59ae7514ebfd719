"""How the engine splits its cache memory: a hybrid model's state slots first (one per running
sequence, plus the checkpoint slots that save states for prefix reuse), KV blocks from the rest
of the same budget (`EngineConfig.kv_cache_bytes`); and how many tokens one step may hold."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlcx.artifact.config import ArtifactConfig
from mlcx.runtime.core.config import EngineConfig


@dataclass(frozen=True)
class CacheSizes:
    num_blocks: int  # KV blocks
    live_slots: int  # state slots of running sequences (max_batch; 0 without state layers)
    checkpoint_slots: int  # state slots for saved states (prefix reuse)
    state_slot_bytes: int  # one slot's bytes over every state layer

    @property
    def num_state_slots(self) -> int:
        return self.live_slots + self.checkpoint_slots

    @property
    def state_bytes(self) -> int:
        return self.num_state_slots * self.state_slot_bytes


def cache_sizes(art: ArtifactConfig, config: EngineConfig) -> CacheSizes:
    """The KV blocks and state slots the runner allocates. `max_batch` bounds the live slots;
    the checkpoint slots default to as many (none without prefix caching); an explicit
    `kv_blocks` is exact, otherwise the blocks are what `kv_cache_bytes` leaves after the states,
    capped at max_batch full windows and never below one window (plus a block)."""
    slot_bytes = art.state_slot_bytes
    live = config.max_batch if slot_bytes else 0
    checkpoints = 0
    if slot_bytes and config.enable_prefix_caching:
        wanted = config.state_checkpoints
        checkpoints = config.max_batch if wanted is None else wanted
    sizes = CacheSizes(0, live, checkpoints, slot_bytes)
    per_seq = math.ceil(art.context_window / art.page_size)
    if config.kv_blocks is not None:
        blocks = config.kv_blocks
    elif sizes.state_bytes >= config.kv_cache_bytes:
        raise ValueError(
            f"the states of {live} running sequences and {checkpoints} checkpoints take "
            f"{sizes.state_bytes} bytes ({slot_bytes} per sequence), more than kv_cache_bytes "
            f"({config.kv_cache_bytes}): raise kv_cache_bytes, or lower max_batch or "
            "state_checkpoints"
        )
    else:
        budget = (config.kv_cache_bytes - sizes.state_bytes) // max(art.kv_block_bytes, 1)
        blocks = max(per_seq + 1, min(budget, per_seq * config.max_batch))
    return CacheSizes(blocks, live, checkpoints, slot_bytes)


def step_budget(config: EngineConfig, compiled_chunk: int) -> int:
    """Tokens one step may hold: the prefill chunk, or the batch where that is larger. The step
    functions' memory is planned for at most the compiled chunk (mlcx.passes.step_bounds)."""
    budget = max(config.prefill_chunk or compiled_chunk, config.max_batch)
    if budget > compiled_chunk:
        raise ValueError(
            f"steps of {budget} tokens (prefill_chunk {config.prefill_chunk}, max_batch "
            f"{config.max_batch}) exceed the {compiled_chunk} this artifact's step functions "
            f"were compiled for: lower them, or recompile with --prefill-chunk {budget}"
        )
    return budget
