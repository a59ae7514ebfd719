"""Engine settings, validated once."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.artifact.config import ArtifactConfig
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
    # hybrid models: state slots that save states for prefix reuse, beside the max_batch slots
    # of running sequences (from kv_cache_bytes too); None: max_batch, 0: no saves
    state_checkpoints: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_waiting", "kv_cache_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.kv_blocks is not None and self.kv_blocks < 2:
            raise ValueError(f"kv_blocks must be at least 2, got {self.kv_blocks}")
        if self.state_checkpoints is not None and self.state_checkpoints < 0:
            raise ValueError(f"state_checkpoints must be >= 0, got {self.state_checkpoints}")
        if self.prefill_chunk is not None and self.prefill_chunk < 1:
            raise ValueError(f"prefill_chunk must be positive, got {self.prefill_chunk}")

    def check_artifact(self, art: ArtifactConfig) -> None:
        """Settings the artifact cannot run with, refused when the engine starts."""
        if self.speculative is not None and art.state_tensors:
            raise ValueError(
                f"speculative decoding is not supported with {art.model_name}, a hybrid model: "
                "rejected drafts would have to roll its per-sequence state back too, which mlcx "
                "does not do yet; run it without --speculative"
            )
