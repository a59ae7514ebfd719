"""The scheduler's records: a request and the sequences (choices) it generates.

They hold scheduling state only: token ids, how many of them have KV in the cache, status,
and the token-level rules that end a sequence. Text, sampling state and stop strings are the
output processor's (`output_processor.py`). Sequence ids grow in arrival order; a fork's id
is newer than every sequence that arrived before its first token.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mlcx.runtime.core.images import PromptImage, cache_ids
from mlcx.runtime.lora.slots import LoraRef


class SequenceStatus(enum.Enum):
    WAITING = "waiting"  # queued, or preempted and waiting to be recomputed
    RUNNING = "running"
    FINISHED_STOPPED = "stop"
    FINISHED_LENGTH = "length"
    FINISHED_ABORTED = "abort"

    @property
    def finished(self) -> bool:
        return self not in (SequenceStatus.WAITING, SequenceStatus.RUNNING)


@dataclass(eq=False)
class Sequence:
    seq_id: int
    request_id: str
    index: int  # choice index within its request (n > 1)
    token_ids: list[int]  # prompt, then generated tokens
    num_prompt_tokens: int
    num_computed: int = 0  # tokens whose KV is in the cache
    status: SequenceStatus = SequenceStatus.WAITING

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def output_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens :]

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def num_pending(self) -> int:
        """Tokens still to run through the model before the next token can be sampled."""
        return self.num_tokens - self.num_computed

    @property
    def finished(self) -> bool:
        return self.status.finished

    @property
    def finish_reason(self) -> str | None:
        return self.status.value if self.finished else None


@dataclass(eq=False)
class Request:
    """One prompt and its `n` choices: choice 0 runs alone until its first sample, then the
    other choices fork from it, sharing its prompt's KV blocks."""

    request_id: str
    n: int
    max_new_tokens: int
    stop_token_ids: frozenset[int]  # end a choice (eos unless ignored, and stop_token_ids)
    seqs: list[Sequence] = field(default_factory=list)
    images: tuple[PromptImage, ...] = ()  # in the prompt, in order
    lora: LoraRef | None = None  # the adapter it runs with (runtime.lora), None: none

    def __post_init__(self) -> None:
        self.stop_token_ids = frozenset(self.stop_token_ids)  # callers may give any iterable

    def cache_ids(self, token_ids: list[int]) -> list[int]:
        """The ids its prefix-cache blocks are keyed by: an image's tokens by the image, and
        apart per adapter and scale (LoraRef.salted)."""
        ids = cache_ids(token_ids, self.images)
        return ids if self.lora is None else self.lora.salted(ids)

    @property
    def forked(self) -> bool:
        return len(self.seqs) == self.n

    @property
    def finished(self) -> bool:
        return self.forked and all(seq.finished for seq in self.seqs)

    def stop_status(self, seq: Sequence) -> SequenceStatus | None:
        """Whether the token just appended to `seq` ends it (a stop token before length)."""
        if seq.token_ids[-1] in self.stop_token_ids:
            return SequenceStatus.FINISHED_STOPPED
        if seq.num_output_tokens >= self.max_new_tokens:
            return SequenceStatus.FINISHED_LENGTH
        return None
