"""Engine settings, validated once."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.runtime.speculative.proposer import DEFAULT_NUM_SPECULATIVE, PROPOSER_NAMES


@dataclass(frozen=True)
class EngineConfig:
    max_running: int = 16  # sequences in the running batch
    max_waiting: int = 256  # waiting sequences (queued or preempted) at which add_request
    # raises QueueFullError
    kv_cache_bytes: int = 1 << 30  # device memory for KV pages (capped by what can be used)
    kv_blocks: int | None = None  # exact number of KV blocks (overrides kv_cache_bytes)
    prefill_chunk: int | None = None  # tokens per step; default: the artifact's
    enable_prefix_caching: bool = True
    device: str | None = None  # runner device override ("cpu", "cuda", "metal")
    speculative: str | None = None  # proposer of draft tokens: "ngram" or "draft"; None: off
    num_speculative: int = DEFAULT_NUM_SPECULATIVE  # most tokens drafted per sequence and step
    draft: str | None = None  # the draft model's artifact directory (speculative="draft")
    speculative_max_batch: int = 4  # no drafts while more sequences than this are running
    # one more verified token's cost relative to a decode step (speculator.py; 0.22-0.26
    # measured on the 2-core CPU with row-tiled kernels): picks each sequence's draft length
    # from its acceptance; 0: always the most
    speculative_token_cost: float = 0.25

    def __post_init__(self) -> None:
        for name in ("max_running", "max_waiting", "kv_cache_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.kv_blocks is not None and self.kv_blocks < 2:
            raise ValueError(f"kv_blocks must be at least 2, got {self.kv_blocks}")
        if self.prefill_chunk is not None and self.prefill_chunk < 1:
            raise ValueError(f"prefill_chunk must be positive, got {self.prefill_chunk}")
        self._check_speculation()

    def _check_speculation(self) -> None:
        if self.speculative is not None and self.speculative not in PROPOSER_NAMES:
            raise ValueError(
                f"unknown speculative proposer {self.speculative!r}; "
                f"choose from {', '.join(PROPOSER_NAMES)}"
            )
        for name in ("num_speculative", "speculative_max_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.speculative_token_cost < 1.0:
            raise ValueError(
                f"speculative_token_cost must be in [0, 1), got {self.speculative_token_cost}"
            )
        if (self.speculative == "draft") != (self.draft is not None):
            raise ValueError(
                "a draft model goes with speculative='draft' (--speculative draft --draft "
                "ARTIFACT), and only with it"
            )
