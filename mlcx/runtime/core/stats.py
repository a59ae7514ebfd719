"""What the engine reports about itself: its batch, KV usage and counters (`Engine.stats`)."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.runtime.state import StateStats


@dataclass(frozen=True)
class EngineStats:
    running: int  # sequences in the running batch
    waiting: int  # sequences queued or preempted, not yet running
    kv_usage: float  # blocks held by live sequences / all blocks
    prefix_hit_tokens: int  # tokens found in the prefix cache at admission (SchedulerStats)
    prefix_query_tokens: int  # tokens looked up at admission
    prompt_tokens: int  # prompt tokens of requests that produced a first token
    generated_tokens: int
    computed_tokens: int  # tokens run through the model (prefill chunks and decodes)
    preemptions: int
    spec_proposed_tokens: int = 0  # drafted tokens verified (speculative decoding)
    spec_accepted_tokens: int = 0  # of those, kept
    spec_off_steps: int = 0  # steps without drafts because the batch was too large
    weights_bytes: int = 0  # device memory of the runner's weights
    kv_pool_bytes: int = 0  # device memory of its KV pages (allocated at start)
    step_pool_bytes: int | None = None  # step buffers a runner pools itself (wgpu)
    # a hybrid model's state cache (runtime/state); None for a model without state layers
    state_pool_bytes: int | None = None  # device memory of its state slots (allocated at start)
    state_slots_in_use: int | None = None  # held by running sequences
    state_checkpoints: int | None = None  # saved states held for prefix reuse
    state_checkpoint_hits: int | None = None  # admissions that resumed from a saved state
    # admissions whose cached KV pages reached past the last saved state (the hit shortened or
    # skipped), and the cached tokens they recomputed for want of it
    prefix_hits_without_state: int | None = None
    prefix_tokens_without_state: int | None = None


def state_stats(stats: StateStats | None) -> dict[str, int]:
    """EngineStats' state fields from the state cache's counters (none without state)."""
    if stats is None:
        return {}
    return {
        "state_slots_in_use": stats.slots_in_use,
        "state_checkpoints": stats.checkpoints,
        "state_checkpoint_hits": stats.checkpoint_hits,
        "prefix_hits_without_state": stats.hits_without_state,
        "prefix_tokens_without_state": stats.tokens_without_state,
    }
