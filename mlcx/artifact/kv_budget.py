"""What an artifact's KV cache costs: bytes per token over the KV layers (keys and values, in the
cache dtype, with an int8 cache's scale bytes) and for a whole context window; and what a hybrid
model's per-sequence state costs (one state slot, whatever the sequence's length)."""

from __future__ import annotations

from dataclasses import dataclass

from mlcx.artifact.config import ArtifactConfig

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: float) -> str:
    """1024-based, three significant digits below 100 of a unit: 36 KiB, 8.25 GiB, 1000 MiB."""
    unit = 0
    while n >= 1024 and unit < len(UNITS) - 1:
        n, unit = n / 1024, unit + 1
    return f"{n:.0f} {UNITS[unit]}" if n >= 100 else f"{n:.3g} {UNITS[unit]}"


@dataclass(frozen=True)
class KVBudget:
    dtype: str
    bytes_per_token: int
    tokens: int
    total_bytes: int  # whole pages: the window rounded up to the page size
    state_bytes_per_sequence: int = 0  # a hybrid model's state slot; 0: no state layers

    def describe(self) -> str:
        line = (
            f"KV cache: {self.dtype}, {human_bytes(self.bytes_per_token)}/token, "
            f"{human_bytes(self.total_bytes)} for {self.tokens} tokens"
        )
        if self.state_bytes_per_sequence:
            line += f"; state: {human_bytes(self.state_bytes_per_sequence)}/sequence"
        return line


def kv_budget(config: ArtifactConfig, tokens: int | None = None) -> KVBudget:
    """The cache one sequence of `tokens` tokens (default: the context window) fills."""
    tokens = config.context_window if tokens is None else tokens
    page = config.kv_block_bytes  # one page of every layer
    pages = -(-tokens // config.page_size)
    per_token = page // config.page_size
    state = state_bytes_per_sequence(config)
    return KVBudget(config.cache_dtype, per_token, tokens, page * pages, state)


def state_bytes_per_sequence(config: ArtifactConfig) -> int:
    """Device bytes of one sequence's state (conv windows and recurrent matrices of every state
    layer), whatever its length: what the bench prints beside the KV bytes per token."""
    return config.state_slot_bytes
