"""Iteration-level scheduling over mlcx's KV cache manager; the owner of request state.

Every step: running sequences first (decodes take one token; unfinished prefills take a chunk
of the token budget), then waiting sequences are admitted while the running set, the token
budget and the free KV blocks allow. A long prompt is prefilled a chunk per step, so running
decodes keep moving. When blocks run out, the youngest running sequence (the last admitted or
forked) is preempted: its blocks are freed and it waits to be recomputed (its full blocks
usually stay in the prefix cache, so recomputing is cheap). No sequence is admitted in a step
that preempted one: the blocks just freed belong to the sequences that needed them.

After the model ran, `update_from_output` commits the step's KV, forks the other choices of an
n > 1 request at its first sample (they share its prompt blocks, copy-on-write), appends the
sampled tokens and finishes sequences on a stop token or max_tokens, freeing their blocks. The
scheduler knows no tokenizer: stop strings are found by the output processor, which ends a
sequence through `finish`.

Speculative decoding: `schedule(drafts)` runs a decode sequence's drafted tokens after its
last token (1 + k new tokens, a logit row each), where the token budget and free blocks allow
without preempting anyone; otherwise the sequence decodes plainly. `update_from_output` then
takes the accepted drafts plus one token, rolls the KV cache back past them (`truncate`, before
`commit`, so rejected tokens are never hashed into the prefix cache) and appends them one by
one, so a stop token or max_tokens among them ends the sequence there.

Hybrid models: a sequence also holds a state slot (runtime/state), freed with its KV blocks
(`_release`); a cached prefix is reused only as far as a saved state reaches.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Mapping
from collections.abc import Sequence as Seq

import numpy as np

from mlcx.runtime.core.drafts import fitting_draft
from mlcx.runtime.core.images import PromptImage, chunk_tokens
from mlcx.runtime.core.scheduler_output import Scheduled, SchedulerOutput, SchedulerStats
from mlcx.runtime.core.sequence import Request, Sequence, SequenceStatus
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.lora.slots import LoraRef
from mlcx.runtime.state import NO_STATES, SequenceStates

RUNNING, WAITING = SequenceStatus.RUNNING, SequenceStatus.WAITING


class Scheduler:
    def __init__(
        self,
        kv: KVCacheManager,
        max_batch: int,
        token_budget: int,
        kv_window: int = 0,
        states: SequenceStates = NO_STATES,
    ):
        if max_batch < 1 or token_budget < 1:
            raise ValueError("max_batch and token_budget must be positive")
        self.kv = kv
        self.states = states  # the state slots of a hybrid model's sequences
        self.kv_window = kv_window  # every layer's sliding window: older pages are released
        self.max_batch = max_batch
        self.token_budget = token_budget
        self.requests: dict[str, Request] = {}  # unfinished requests
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []  # the last admitted or forked (youngest) last
        self.stats = SchedulerStats()
        self._seq_ids = itertools.count()

    # -- requests -------------------------------------------------------------------------
    def add_request(
        self,
        request_id: str,
        prompt_ids: list[int],
        max_new_tokens: int,
        n: int = 1,
        stop_token_ids: Iterable[int] = (),
        images: tuple[PromptImage, ...] = (),
        lora: LoraRef | None = None,
    ) -> Sequence:
        """Queue a request's first choice (`lora`: its adapter); returns its sequence."""
        if request_id in self.requests:
            raise ValueError(f"request {request_id!r} is already in flight")
        if not prompt_ids:
            raise ValueError("the prompt is empty; give at least one token")
        if n < 1 or max_new_tokens < 1:
            raise ValueError(f"n ({n}) and max_new_tokens ({max_new_tokens}) must be positive")
        request = Request(request_id, n, max_new_tokens, stop_token_ids, images=images, lora=lora)
        self.requests[request_id] = request
        seq = self._new_sequence(request, 0, [int(t) for t in prompt_ids], len(prompt_ids))
        self.waiting.append(seq)
        return seq

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def finish(self, seq: Sequence, status: SequenceStatus) -> None:
        """End a sequence (stop token or string, max_tokens, abort) and free its KV blocks."""
        if not status.finished or seq.finished:
            raise ValueError(f"cannot move sequence {seq.seq_id} from {seq.status} to {status}")
        if seq.status is RUNNING:
            self.running.remove(seq)
        else:
            self.waiting.remove(seq)
        self._release(seq)
        seq.status = status
        if self.requests[seq.request_id].finished:
            del self.requests[seq.request_id]

    def abort_request(self, request_id: str) -> list[Sequence]:
        """Abort a request's unfinished sequences (freeing their blocks) and return them."""
        request = self.requests.get(request_id)
        if request is None:
            return []
        aborted = [seq for seq in request.seqs if not seq.finished]
        for seq in aborted:
            self.finish(seq, SequenceStatus.FINISHED_ABORTED)
        self.requests.pop(request_id, None)
        return aborted

    # -- one step -------------------------------------------------------------------------
    def draftable(self) -> list[tuple[Sequence, int]]:
        """(sequence, most tokens worth drafting) for the running sequences that decode next
        step: a draft beyond max_tokens could never be kept."""
        out = []
        for seq in self.running:
            request = self.requests[seq.request_id]
            room = request.max_new_tokens - seq.num_output_tokens - 1
            if seq.num_pending == 1 and request.forked and room > 0:
                out.append((seq, room))
        return out

    def schedule(self, drafts: Mapping[int, Seq[int]] | None = None) -> SchedulerOutput:
        """`drafts`: seq_id -> drafted tokens for decode sequences (see `draftable`)."""
        out = SchedulerOutput()
        budget = self.token_budget
        decodes = [s for s in self.running if s.num_pending == 1]
        prefills = [s for s in self.running if s.num_pending > 1]
        for seq in decodes + prefills:
            if seq.status is not RUNNING:  # preempted earlier in this step
                continue
            n = self._chunk(seq, min(seq.num_pending, budget))
            draft = fitting_draft(
                self.kv, seq, (drafts or {}).get(seq.seq_id, ()), budget, len(self.running)
            )
            if n and self._reserve(seq, n, out, draft):
                budget -= n + len(draft)
        admit = not out.preempted  # blocks just freed are for the sequences that needed them
        while admit and self.waiting and budget > 0 and len(self.running) < self.max_batch:
            admitted = self._admit(self.waiting[0], budget, out)
            if admitted == 0:
                break
            budget -= admitted
        if out.scheduled:
            out.state = self.states.take([item.seq.seq_id for item in out.scheduled])
        return out

    def update_from_output(
        self, out: SchedulerOutput, sampled: Seq[int | Seq[int]]
    ) -> list[Sequence]:
        """Apply a step that ran: `sampled` holds one token per `out.samples` entry, or for a
        drafted one its accepted drafts and one more token. Returns the sequences that
        received them, in that order (some finished now, maybe before their last token)."""
        if len(sampled) != len(out.samples):
            raise ValueError(f"{len(sampled)} sampled tokens for {len(out.samples)} samples")
        self.states.done(out.state)
        tokens = [[int(t)] if np.ndim(t) == 0 else [int(x) for x in t] for t in sampled]
        for item, item_tokens in zip(out.scheduled, out.first_sample_tokens(tokens), strict=True):
            self._commit(item, item_tokens)
        seqs = [seq for item in out.scheduled for seq in self._sampling(item)]
        for seq, seq_tokens in zip(seqs, tokens, strict=True):
            for token in seq_tokens:
                self._append_token(seq, token)
                if seq.finished:
                    break
        return seqs

    # -- internals ------------------------------------------------------------------------
    def _new_sequence(
        self, request: Request, index: int, token_ids: list[int], num_prompt: int
    ) -> Sequence:
        seq = Sequence(next(self._seq_ids), request.request_id, index, token_ids, num_prompt)
        request.seqs.append(seq)
        return seq

    def _commit(self, item: Scheduled, tokens: list[int]) -> None:
        seq, num_new = item.seq, item.num_new
        if item.draft:
            accepted = len(tokens) - 1
            if not 0 <= accepted <= len(item.draft) or tokens[:accepted] != list(
                item.draft[:accepted]
            ):
                raise ValueError(f"tokens {tokens} do not extend an accepted part of {item.draft}")
            num_new -= len(item.draft) - accepted
            self.kv.truncate(seq.seq_id, seq.num_computed + num_new)
            self.kv.commit(seq.seq_id, [*self._cache_ids(seq), *item.draft[:accepted]])
        else:
            self.kv.commit(seq.seq_id, self._cache_ids(seq))
        if self.kv_window:
            self.kv.release_outside_window(seq.seq_id, self.kv_window)
        seq.num_computed += num_new
        self.stats.computed_tokens += item.num_new
        self.states.committed(seq.seq_id, seq.num_computed, seq.num_tokens + bool(item.choices))

    def _reserve(
        self, seq: Sequence, n: int, out: SchedulerOutput, draft: tuple[int, ...] = ()
    ) -> bool:
        while not self.kv.can_append(seq.seq_id, n + len(draft)):
            victim = self.running[-1]
            self._preempt(victim, out)
            if victim is seq:
                return False
        self._schedule(seq, n, out, draft)
        return True

    def _preempt(self, seq: Sequence, out: SchedulerOutput) -> None:
        self.running.remove(seq)
        out.scheduled = [s for s in out.scheduled if s.seq is not seq]
        self._release(seq)
        seq.num_computed = 0
        seq.status = WAITING
        self.waiting.appendleft(seq)
        out.preempted.append(seq)
        self.stats.preemptions += 1

    def _admit(self, seq: Sequence, budget: int, out: SchedulerOutput) -> int:
        request = self.requests[seq.request_id]
        choices = 1 if request.forked else request.n  # forks take their slots at the fork
        if not self.states.can_admit(choices):
            return 0
        ids = self._cache_ids(seq)
        resume = self.states.resume(ids)
        seq.num_computed = self.kv.add_sequence(seq.seq_id, ids, resume.blocks)
        n = self._chunk(seq, min(seq.num_pending, budget))
        if not n or not self.kv.can_append(seq.seq_id, n):
            self._release(seq)
            seq.num_computed = 0
            return 0
        self.states.admit(seq.seq_id, choices, resume)
        self.waiting.popleft()
        self.running.append(seq)
        seq.status = RUNNING
        self.stats.prefix_hit_tokens += seq.num_computed
        self.stats.prefix_query_tokens += seq.num_tokens
        self._schedule(seq, n, out)
        return n

    def _chunk(self, seq: Sequence, n: int) -> int:
        """n, or fewer tokens where a state save pays, or where n would cut an image
        (core/images.py)."""
        n = self.states.chunk(seq.num_computed, seq.num_tokens, n)
        return chunk_tokens(self.requests[seq.request_id].images, seq.num_computed, n)

    def _release(self, seq: Sequence) -> None:
        """Free what a sequence holds, its KV blocks and its state slot: the one call on every
        path a sequence stops (finish, abort, preemption, an admission that did not fit)."""
        if seq.seq_id in self.kv:
            self.kv.free(seq.seq_id)
        self.states.release(seq.seq_id)

    def _cache_ids(self, seq: Sequence) -> list[int]:
        return self.requests[seq.request_id].cache_ids(seq.token_ids)

    def _schedule(
        self, seq: Sequence, n: int, out: SchedulerOutput, draft: tuple[int, ...] = ()
    ) -> None:
        out.copies += self.kv.append(seq.seq_id, n + len(draft))
        tokens = tuple(seq.token_ids[seq.num_computed : seq.num_computed + n]) + draft
        out.scheduled.append(Scheduled(seq, tokens, self._choices(seq, n), draft))

    def _choices(self, seq: Sequence, n: int) -> tuple[int, ...]:
        if seq.num_computed + n < seq.num_tokens:
            return ()
        request = self.requests[seq.request_id]
        return (seq.index,) if request.forked else tuple(range(request.n))

    def _sampling(self, item: Scheduled) -> list[Sequence]:
        """The sequences sampling from `item`'s row; forks the other choices at the first."""
        seq = item.seq
        children = [self._fork(seq, index) for index in item.choices if index != seq.index]
        return [seq, *children] if item.choices else []

    def _fork(self, parent: Sequence, index: int) -> Sequence:
        request = self.requests[parent.request_id]
        child = self._new_sequence(request, index, list(parent.token_ids), parent.num_prompt_tokens)
        child.num_computed = parent.num_computed
        child.status = RUNNING
        self.kv.fork(parent.seq_id, child.seq_id)
        self.states.fork(parent.seq_id, child.seq_id)
        self.running.append(child)
        return child

    def _append_token(self, seq: Sequence, token: int) -> None:
        seq.token_ids.append(token)
        self.stats.generated_tokens += 1
        if seq.index == 0 and seq.num_output_tokens == 1:
            self.stats.prompt_tokens += seq.num_prompt_tokens
        status = self.requests[seq.request_id].stop_status(seq)
        if status is not None:
            self.finish(seq, status)
