"""What one side of `mlcx bench web` measures: a prefill + decode run, and a chat answer."""

from __future__ import annotations

from dataclasses import dataclass

KV_BLOCKS = 64  # KV cache pages on both sides


@dataclass(frozen=True)
class Sample:
    """One request: prefill = request to first token; decode = first to last token."""

    prefill_tokens: int
    prefill_s: float
    decode_tokens: int
    decode_s: float

    def __post_init__(self) -> None:
        if self.decode_tokens < 1 or min(self.prefill_s, self.decode_s) <= 0:
            raise ValueError(f"a bench run produced no timed decode steps: {self}")

    @property
    def prefill_tok_s(self) -> float:
        return self.prefill_tokens / self.prefill_s

    @property
    def decode_tok_s(self) -> float:
        return self.decode_tokens / self.decode_s


@dataclass(frozen=True)
class Answer:
    """A greedy chat reply: its text, tokens, and seconds from sending to the last token."""

    text: str
    seconds: float
    tokens: int
