"""What the engine reports about itself: its batch, KV usage and counters (`Engine.stats`)."""

from __future__ import annotations

from dataclasses import dataclass


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
