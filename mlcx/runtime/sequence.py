"""One generated sequence: its tokens, its place in the KV cache, and when it stops."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mlcx.runtime.detokenizer import IncrementalDetokenizer
from mlcx.runtime.outputs import Delta
from mlcx.runtime.sampler import SampleResult, SamplingState
from mlcx.runtime.sampling_params import SamplingParams
from mlcx.runtime.stop import StopStringMatcher


@dataclass(eq=False)
class Sequence:
    seq_id: int
    request_id: str
    index: int  # choice index within its request (n > 1)
    prompt_ids: list[int]
    params: SamplingParams
    sampling: SamplingState
    detok: IncrementalDetokenizer
    stop: StopStringMatcher
    max_new_tokens: int
    eos_ids: frozenset[int]
    output_ids: list[int] = field(default_factory=list)
    num_computed: int = 0  # tokens whose KV is in the cache
    finish_reason: str | None = None
    arrival: float = field(default_factory=time.perf_counter)
    forked: bool = False

    @property
    def all_ids(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def num_pending(self) -> int:
        """Tokens still to run through the model before the next token can be sampled."""
        return self.num_tokens - self.num_computed

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def _is_stop_token(self, token: int) -> bool:
        if token in self.params.stop_token_ids:
            return True
        return not self.params.ignore_eos and token in self.eos_ids

    def add_token(self, result: SampleResult) -> Delta:
        token = result.token_id
        self.sampling.append(token)
        self.output_ids.append(token)
        text = ""
        if self._is_stop_token(token):
            self.finish_reason = "stop"
        else:
            check = self.stop.feed(self.detok.push(token))
            text = check.text
            if check.stopped:
                self.finish_reason = "stop"
        if self.finish_reason is None and len(self.output_ids) >= self.max_new_tokens:
            self.finish_reason = "length"
        if self.finish_reason is not None and not self.stop.stopped:
            text += self._drain()
        logprobs = (result,) if self.params.logprobs else None
        return self.delta(text, (token,), logprobs)

    def _drain(self) -> str:
        check = self.stop.feed(self.detok.flush())
        if check.stopped:
            self.finish_reason = "stop"
            return check.text
        return check.text + self.stop.flush()

    def abort(self) -> Delta:
        self.finish_reason = "abort"
        return self.delta("", (), None)

    def delta(self, text: str, tokens: tuple[int, ...], logprobs) -> Delta:
        return Delta(
            self.request_id,
            self.index,
            text,
            tokens,
            logprobs,
            self.finish_reason,
            len(self.prompt_ids),
            len(self.output_ids),
        )
