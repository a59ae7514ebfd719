"""The engine every front door shares (CLI, REST server, benchmarks).

`step()` is the whole loop: schedule, run, sample, report. Requests and aborts arriving from
other threads are queued and applied at the start of the next step, so only the thread that
calls `step()` touches the scheduler and the KV cache manager.
"""

from __future__ import annotations

import itertools
import math
import queue
import threading
from dataclasses import dataclass

import numpy as np

from mlcx.artifact.config import Artifact
from mlcx.errors import ContextWindowError, MaxTokensTooLargeError, PromptError, QueueFullError
from mlcx.runtime.backends.registry import create_runner, kv_block_bytes
from mlcx.runtime.detokenizer import IncrementalDetokenizer
from mlcx.runtime.engine_config import EngineConfig
from mlcx.runtime.forward_batch import ForwardBatch
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.outputs import Delta
from mlcx.runtime.sampler import SamplingState, sample
from mlcx.runtime.sampling_params import SamplingParams
from mlcx.runtime.scheduler import Scheduled, Scheduler
from mlcx.runtime.sequence import Sequence
from mlcx.runtime.stop import StopStringMatcher
from mlcx.runtime.tokenizer import Tokenizer


@dataclass(frozen=True)
class EngineStats:
    running: int  # sequences in the running batch
    waiting: int  # sequences queued or preempted, not yet running
    kv_usage: float  # blocks held by live sequences / all blocks
    prefix_hit_tokens: int  # prompt tokens found in the prefix cache at admission
    prefix_query_tokens: int  # prompt tokens looked up at admission
    prompt_tokens: int  # prompt tokens of requests that produced a first token
    generated_tokens: int
    computed_tokens: int  # tokens run through the model (prefill chunks and decodes)
    preemptions: int


class Engine:
    def __init__(
        self, artifact: Artifact | str, config: EngineConfig = EngineConfig(), runner=None
    ):
        self.artifact = artifact if isinstance(artifact, Artifact) else Artifact(artifact)
        self.config = config
        art = self.artifact.config
        self.context_window = art.context_window
        self.tokenizer = Tokenizer.from_dir(self.artifact.path)
        self.chat_template = self.tokenizer.chat_template()
        self.num_blocks = self._num_blocks()
        self.runner = runner or create_runner(self.artifact, self.num_blocks, config.device)
        self.kv = KVCacheManager(self.num_blocks, art.page_size, config.enable_prefix_caching)
        chunk = config.prefill_chunk or art.prefill_chunk
        self.scheduler = Scheduler(self.kv, config.max_running, max(chunk, config.max_running))
        self.sequences: dict[str, list[Sequence]] = {}
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._inbox_lock = threading.Lock()
        self._queued_adds = 0  # adds in the inbox, not yet in the scheduler
        self._seq_ids = itertools.count()
        self.prompt_tokens = 0
        self.generated_tokens = 0
        self.computed_tokens = 0
        # Taken by `step` once scheduled and once done: other threads read this, not `stats()`,
        # and see the batch that a long model step is running.
        self.snapshot = self.stats()

    def _num_blocks(self) -> int:
        page = self.artifact.config.page_size
        per_seq = math.ceil(self.context_window / page)
        if self.config.kv_blocks is not None:
            return self.config.kv_blocks
        budget = self.config.kv_cache_bytes // kv_block_bytes(self.artifact)
        return max(per_seq + 1, min(budget, per_seq * self.config.max_running))

    # -- requests (any thread) ------------------------------------------------------------
    def tokenize_prompt(self, prompt: str | list[int]) -> list[int]:
        if isinstance(prompt, str):
            return self.tokenizer.encode(prompt, add_special_tokens=True)
        if not prompt:
            raise PromptError("the prompt is empty; give at least one token")
        bad = [t for t in prompt if not 0 <= int(t) < self.tokenizer.vocab_size]
        if bad:
            raise PromptError(
                f"token ids {bad[:5]} are outside the vocabulary "
                f"(0..{self.tokenizer.vocab_size - 1})"
            )
        return [int(t) for t in prompt]

    def check_fits(self, prompt_len: int, max_tokens: int | None) -> int:
        """The number of tokens the request may generate; raises if it cannot fit."""
        window = min(self.context_window, self.num_blocks * self.artifact.config.page_size)
        if prompt_len == 0:
            raise PromptError("the prompt is empty; give at least one token")
        if prompt_len >= window:
            raise ContextWindowError(
                f"the prompt has {prompt_len} tokens but the context window is {window}; "
                "shorten the prompt"
            )
        if max_tokens is not None and prompt_len + max_tokens > window:
            raise MaxTokensTooLargeError(
                f"the prompt ({prompt_len} tokens) plus max_tokens ({max_tokens}) exceeds the "
                f"context window of {window} tokens; lower max_tokens to at most "
                f"{window - prompt_len}"
            )
        return max_tokens if max_tokens is not None else window - prompt_len

    def add_request(
        self, request_id: str, prompt: str | list[int], params: SamplingParams
    ) -> list[int]:
        """Validate and queue a request; returns its prompt token ids."""
        prompt_ids = self.tokenize_prompt(prompt)
        max_new = self.check_fits(len(prompt_ids), params.max_tokens)
        params.validate_vocab(self.tokenizer.vocab_size)
        with self._inbox_lock:
            waiting = self._queued_adds + len(self.scheduler.waiting)
            if waiting >= self.config.max_waiting:
                raise QueueFullError(
                    f"{waiting} requests are waiting (the limit is {self.config.max_waiting}); "
                    "retry later"
                )
            self._queued_adds += 1
            self._inbox.put(("add", request_id, prompt_ids, params, max_new))
        return prompt_ids

    def abort(self, request_id: str) -> None:
        self._inbox.put(("abort", request_id))

    # -- the loop (one thread) ------------------------------------------------------------
    def has_work(self) -> bool:
        return not self._inbox.empty() or self.scheduler.has_work()

    def step(self) -> list[Delta]:
        deltas = self._apply_inbox()
        plan = self.scheduler.schedule()
        self.snapshot = self.stats()
        if not plan.scheduled:
            return deltas
        logits = self.runner.forward(self._batch(plan.scheduled, plan.copies))
        for item in plan.scheduled:
            self.kv.commit(item.seq.seq_id)
            item.seq.num_computed += item.num_new
            self.computed_tokens += item.num_new
        deltas += self._postprocess(plan.scheduled, logits)
        self.snapshot = self.stats()
        return deltas

    def _batch(self, scheduled: list[Scheduled], copies) -> ForwardBatch:
        ids = [
            t
            for s in scheduled
            for t in s.seq.all_ids[s.seq.num_computed : s.seq.num_computed + s.num_new]
        ]
        tables = self.kv.build_arrays([(s.seq.seq_id, s.num_new) for s in scheduled])
        return ForwardBatch(np.array(ids, dtype=np.int32), tables, copies)

    def _postprocess(self, scheduled: list[Scheduled], logits: np.ndarray) -> list[Delta]:
        rows, seqs = [], []
        for row, item in enumerate(scheduled):
            if item.seq.num_pending == 0:  # every token is in the cache: sample the next one
                for seq in self._with_forks(item.seq):
                    rows.append(row)
                    seqs.append(seq)
        if not seqs:
            return []
        results = sample(logits[rows], [s.sampling for s in seqs])
        deltas = []
        for seq, result in zip(seqs, results, strict=True):
            if not seq.output_ids and seq.index == 0:
                self.prompt_tokens += len(seq.prompt_ids)
            self.generated_tokens += 1
            delta = seq.add_token(result)
            deltas.append(delta)
            if seq.finished:
                self._finish(seq)
        return deltas

    def _with_forks(self, seq: Sequence) -> list[Sequence]:
        """At its first sample, choice 0 of an n > 1 request forks the other choices; they
        share its prompt pages (copy-on-write)."""
        if seq.index or seq.forked or seq.params.n == 1 or seq.output_ids:
            return [seq]
        seq.forked = True
        group = [seq]
        for index in range(1, seq.params.n):
            child = self._new_sequence(
                seq.request_id, index, seq.prompt_ids, seq.params, seq.max_new_tokens
            )
            self.kv.fork(seq.seq_id, child.seq_id)
            child.num_computed = seq.num_computed
            self.scheduler.add_running(child)
            self.sequences[seq.request_id].append(child)
            group.append(child)
        return group

    def _new_sequence(self, request_id, index, prompt_ids, params, max_new) -> Sequence:
        state = SamplingState(params, prompt_ids, choice_index=index)
        return Sequence(
            seq_id=next(self._seq_ids),
            request_id=request_id,
            index=index,
            prompt_ids=list(prompt_ids),
            params=params,
            sampling=state,
            detok=IncrementalDetokenizer(self.tokenizer, prompt_ids),
            stop=StopStringMatcher(params.stop),
            max_new_tokens=max_new,
            eos_ids=frozenset(self.tokenizer.eos_token_ids),
        )

    def _apply_inbox(self) -> list[Delta]:
        deltas = []
        while not self._inbox.empty():
            kind, request_id, *rest = self._inbox.get()
            if kind == "add":
                with self._inbox_lock:
                    self._queued_adds -= 1
                prompt_ids, params, max_new = rest
                seq = self._new_sequence(request_id, 0, prompt_ids, params, max_new)
                self.sequences[request_id] = [seq]
                self.scheduler.add(seq)
            else:
                deltas += self._abort_now(request_id)
        return deltas

    def _abort_now(self, request_id: str) -> list[Delta]:
        deltas = []
        for seq in self.sequences.pop(request_id, []):
            if not seq.finished:
                self.scheduler.remove(seq)
                deltas.append(seq.abort())
        return deltas

    def _finish(self, seq: Sequence) -> None:
        self.scheduler.remove(seq)
        group = self.sequences.get(seq.request_id, [])
        if all(s.finished for s in group) and len(group) == seq.params.n:
            del self.sequences[seq.request_id]

    def stats(self) -> EngineStats:
        return EngineStats(
            running=len(self.scheduler.running),
            waiting=len(self.scheduler.waiting) + self._queued_adds,
            kv_usage=self.kv.usage(),
            prefix_hit_tokens=self.scheduler.prefix_hit_tokens,
            prefix_query_tokens=self.scheduler.prefix_query_tokens,
            prompt_tokens=self.prompt_tokens,
            generated_tokens=self.generated_tokens,
            computed_tokens=self.computed_tokens,
            preemptions=self.scheduler.preemptions,
        )
