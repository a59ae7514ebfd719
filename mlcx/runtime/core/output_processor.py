"""Per-choice output: sampling state, incremental detokenization, stop strings, and the Delta
each sampled token becomes.

The engine owns this, not the scheduler: it needs the tokenizer, and the scheduler stays
tokenizer-free so that tests build one from a KV cache manager alone (vLLM v1 splits its
engine core's scheduler from the front end's output processor the same way). The scheduler
ends a sequence on token rules (a stop token, max_tokens) because that frees its KV blocks;
stop strings need text, so they are found here and the engine tells the scheduler, as it
does when a token completes the choice's constraint. Preemption leaves this side alone: a
recomputed sequence resumes with its sampling state and constraint matcher where they stood.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlcx.runtime.core.outputs import Delta
from mlcx.runtime.core.sequence import Sequence
from mlcx.runtime.sample.logits_buffer import LogitsBuffer
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import SampleResult, sample
from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.speculative.verify import verify_batch
from mlcx.runtime.structured.matcher import CompiledConstraint
from mlcx.runtime.structured.token_masks import TokenMasks
from mlcx.runtime.text.detokenizer import IncrementalDetokenizer
from mlcx.runtime.text.stop import StopStringMatcher
from mlcx.runtime.text.tokenizer import Tokenizer


@dataclass(eq=False)
class ChoiceOutput:
    """The output side of one choice of a request."""

    request_id: str
    index: int
    params: SamplingParams
    num_prompt_tokens: int
    sampling: SamplingState
    detok: IncrementalDetokenizer
    stop: StopStringMatcher
    num_output_tokens: int = 0
    finish_reason: str | None = None

    def add_token(self, result: SampleResult, finish_reason: str | None) -> Delta:
        """The delta of one sampled token. `finish_reason` is the scheduler's: "stop" for a
        stop token (which adds no text) or "length"; a stop string in the text, or a
        constraint this token completed, makes "stop"."""
        return self.add_tokens([result], finish_reason)

    def add_tokens(self, results: list[SampleResult], finish_reason: str | None) -> Delta:
        """One delta for the tokens a step appended (several when drafts were kept);
        `finish_reason` is the scheduler's for the last. A stop string ends the choice at
        the token that completes it: later tokens are dropped."""
        text, tokens = "", []
        for i, result in enumerate(results):
            text += self._add(result, finish_reason if i == len(results) - 1 else None)
            tokens.append(result.token_id)
            if self.finish_reason is not None:
                break
        logprobs = tuple(results[: len(tokens)]) if self.params.logprobs else None
        return self._delta(text, tuple(tokens), logprobs)

    def _add(self, result: SampleResult, finish_reason: str | None) -> str:
        token = result.token_id
        self.sampling.append(token)
        self.num_output_tokens += 1
        self.finish_reason = finish_reason
        text = ""
        if finish_reason != "stop":
            check = self.stop.feed(self.detok.push(token))
            text = check.text
            if check.stopped or self.sampling.constraint_done:
                self.finish_reason = "stop"
        if self.finish_reason is not None and not self.stop.stopped:
            text += self._drain()
        return text

    def abort(self) -> Delta:
        self.finish_reason = "abort"
        return self._delta("", (), None)

    def _drain(self) -> str:
        """Text held back by the detokenizer and the stop matcher, at the end."""
        check = self.stop.feed(self.detok.flush())
        if check.stopped:
            self.finish_reason = "stop"
            return check.text
        return check.text + self.stop.flush()

    def _delta(self, text: str, tokens: tuple[int, ...], logprobs) -> Delta:
        return Delta(
            self.request_id,
            self.index,
            text,
            tokens,
            logprobs,
            self.finish_reason,
            self.num_prompt_tokens,
            self.num_output_tokens,
        )


class OutputProcessor:
    def __init__(self, tokenizer: Tokenizer, keep_special_tokens: bool = False):
        """`keep_special_tokens`: decode them into the text (harmony's markers are)."""
        self.tokenizer = tokenizer
        self.keep_special_tokens = keep_special_tokens
        self._requests: dict[str, list[ChoiceOutput]] = {}  # until every choice finished
        self._scratch = LogitsBuffer()

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._requests

    def add_request(
        self,
        request_id: str,
        prompt_ids: list[int],
        params: SamplingParams,
        constraint: CompiledConstraint | None = None,
    ) -> None:
        """`constraint`: the compiled `params.constraint`; each choice gets its own matcher."""
        self._requests[request_id] = [
            ChoiceOutput(
                request_id,
                index,
                params,
                len(prompt_ids),
                SamplingState(
                    params,
                    prompt_ids,
                    choice_index=index,
                    matcher=constraint.matcher() if constraint else None,
                ),
                IncrementalDetokenizer(
                    self.tokenizer, prompt_ids, skip_special_tokens=not self.keep_special_tokens
                ),
                StopStringMatcher(params.stop),
            )
            for index in range(params.n)
        ]

    def state(self, request_id: str, index: int) -> SamplingState:
        return self._requests[request_id][index].sampling

    def can_draft(self, request_id: str, index: int) -> bool:
        """Whether a choice may be drafted for: not when it is constrained (its matcher
        cannot take back rejected tokens; such a choice decodes plainly) or reports
        logprobs (verification computes none)."""
        state = self._requests[request_id][index].sampling
        return state.matcher is None and not state.params.logprobs

    def sample(
        self,
        logits: np.ndarray,
        samples: list[tuple[int, str, int]],
        drafts: list[tuple[int, ...]] | None = None,
        proposals: list[np.ndarray | None] | None = None,
    ) -> list[list[SampleResult]]:
        """Tokens per (first logits row, request id, choice index), with the choice's state:
        one, or for a drafted choice (drafts[i], proposal distribution proposals[i]) the kept
        draft tokens and one more, verified against the rows that follow its first."""
        drafts = drafts or [()] * len(samples)
        out: list[list[SampleResult]] = [[] for _ in samples]
        plain = [i for i, d in enumerate(drafts) if not d]
        if plain:
            states = self._states([samples[i] for i in plain])
            rows = [samples[i][0] for i in plain]
            # one logits row per sample in order (a decode step) needs no gathered copy
            mine = logits if rows == list(range(len(logits))) else logits[rows]
            results = sample(mine, states, self._masks(states), self._scratch)
            for i, result in zip(plain, results, strict=True):
                out[i] = [result]
        drafted = [i for i, d in enumerate(drafts) if d]
        if drafted:
            tokens = verify_batch(
                logits,
                [samples[i][0] for i in drafted],
                self._states([samples[i] for i in drafted]),
                [drafts[i] for i in drafted],
                [(proposals or [None] * len(samples))[i] for i in drafted],
            )
            for i, ids in zip(drafted, tokens, strict=True):
                out[i] = [SampleResult(t, None, None) for t in ids]
        return out

    def _masks(self, states: list[SamplingState]) -> TokenMasks | None:
        """The filled token masks of the constrained states; None when there are none."""
        pairs = [(i, s.matcher) for i, s in enumerate(states) if s.matcher is not None]
        if not pairs:
            return None
        rows, matchers = zip(*pairs, strict=True)
        return TokenMasks(rows, matchers, self.tokenizer.vocab_size).fill()

    def _states(self, samples: list[tuple[int, str, int]]) -> list[SamplingState]:
        return [self._requests[rid][index].sampling for _, rid, index in samples]

    def process(
        self, seqs: list[Sequence], results: list[SampleResult] | list[list[SampleResult]]
    ) -> list[Delta]:
        """Deltas of the tokens the scheduler appended to `seqs` (a result, or the results
        of every token appended to that sequence this step)."""
        deltas = []
        for seq, result in zip(seqs, results, strict=True):
            choices = self._requests[seq.request_id]
            batch = [result] if isinstance(result, SampleResult) else result
            deltas.append(choices[seq.index].add_tokens(batch, seq.finish_reason))
            if all(choice.finish_reason for choice in choices):
                del self._requests[seq.request_id]
        return deltas

    def abort(self, request_id: str, seqs: list[Sequence]) -> list[Delta]:
        """Deltas of a request's sequences the scheduler just aborted."""
        choices = self._requests.pop(request_id, [])
        return [choices[seq.index].abort() for seq in seqs]
