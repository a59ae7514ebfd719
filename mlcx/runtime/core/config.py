"""Engine settings, validated once."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.runtime.speculative.config import SpeculativeConfig


@dataclass(frozen=True)
class EngineConfig:
    max_batch: int = 16  # sequences in the running batch (`--max-batch`)
    max_waiting: int = 256  # waiting sequences (queued or preempted) at which add_request
    # raises QueueFullError
    kv_cache_bytes: int = 1 << 30  # device memory for KV pages (capped by what can be used)
    kv_blocks: int | None = None  # exact number of KV blocks (overrides kv_cache_bytes)
    prefill_chunk: int | None = None  # tokens per step; default: the artifact's
    enable_prefix_caching: bool = True
    device: str | None = None  # runner device override ("cpu", "cuda", "metal")
    speculative: SpeculativeConfig | None = None  # None: no speculative decoding
    # LoRA adapters a request may pick, as (name, PEFT folder or GGUF adapter) pairs; the
    # artifact must have adapter slots for them (runtime.lora)
    lora: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_waiting", "kv_cache_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.kv_blocks is not None and self.kv_blocks < 2:
            raise ValueError(f"kv_blocks must be at least 2, got {self.kv_blocks}")
        if self.prefill_chunk is not None and self.prefill_chunk < 1:
            raise ValueError(f"prefill_chunk must be positive, got {self.prefill_chunk}")
