"""What a serving peer of `mlcx bench serve --against` is asked to run, validated once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServingSetup:
    gguf: Path  # the model file mlcx's server was compiled from
    threads: int
    max_batch: int  # sequences served in parallel (llama-server: slots)
    ctx_per_seq: int = 2048  # context of each sequence
    build: bool = False  # build a missing peer (takes long)
    say: Callable[[str], None] = print

    def __post_init__(self) -> None:
        for name in ("threads", "max_batch", "ctx_per_seq"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.gguf.suffix != ".gguf" or not self.gguf.is_file():
            raise ValueError(f"the peer needs a GGUF file, and {self.gguf} is none")
