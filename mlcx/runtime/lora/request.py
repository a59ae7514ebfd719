"""The adapter one request runs with, as a caller names it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlcx.errors import InvalidFieldError


@dataclass(frozen=True)
class LoraRequest:
    """`name`: an adapter the engine loaded (`--lora name=DIR`, `lora={"name": DIR}`);
    `scale` multiplies the adapter's own scale (its alpha / rank): 0 turns it off, 1 runs it as
    trained."""

    name: str
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidFieldError("the LoRA adapter name must be a non-empty string", "lora")
        if isinstance(self.scale, bool) or not isinstance(self.scale, int | float):
            raise InvalidFieldError(f"the LoRA scale must be a number, not {self.scale!r}", "lora")
        if not math.isfinite(self.scale):
            raise InvalidFieldError(f"the LoRA scale must be finite, not {self.scale}", "lora")
