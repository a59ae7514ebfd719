"""What one benchmark run does: a fixed prompt, greedy decode of a fixed length, repeated."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# (prompt, decode) tokens by the kernel kind of the target that runs the artifact: GPU targets
# default to a short run, which even a CPU-emulated adapter (lavapipe) finishes in minutes.
DEFAULT_SIZES: dict[str, tuple[int, int]] = {"cpu": (512, 128), "gpu": (64, 16)}


@dataclass(frozen=True)
class Workload:
    """Batch 1: prefill `prompt_tokens` fixed ids, then greedy-decode `decode_tokens` tokens.

    Each engine runs `reps` times (interleaved with its peers); speeds are medians."""

    prompt_tokens: int = 512
    decode_tokens: int = 128
    reps: int = 3
    threads: int | None = None

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "decode_tokens", "reps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name.replace('_', ' ')} must be at least 1")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, not {self.threads}")

    def warm_up(self) -> Workload:
        """A short run that warms an engine (weights paged in, threads started, kernels and
        pipelines loaded): a 32k-token prompt need not run twice for that."""
        return Workload(min(self.prompt_tokens, 512), min(self.decode_tokens, 8), 1, self.threads)

    def prompt_ids(self, vocab_size: int) -> list[int]:
        """Deterministic ids spread over the vocabulary, away from the special tokens at 0."""
        low = min(100, vocab_size // 4)
        ids = np.arange(self.prompt_tokens, dtype=np.int64) * 7919 % (vocab_size - low) + low
        return ids.tolist()


@dataclass(frozen=True)
class RunTiming:
    """Wall-clock seconds of one run's prefill (to the first logits) and decode steps."""

    prefill_s: float
    decode_s: float


@dataclass(frozen=True)
class Speed:
    """Median tokens per second over runs."""

    prefill: float
    decode: float

    @staticmethod
    def of(runs: list[RunTiming], workload: Workload) -> Speed:
        prefill = float(np.median([workload.prompt_tokens / r.prefill_s for r in runs]))
        decode = float(np.median([workload.decode_tokens / r.decode_s for r in runs]))
        return Speed(prefill, decode)
