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
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Mapping
from collections.abc import Sequence as Seq

import numpy as np

from mlcx.runtime.core.images import PromptImage, cache_ids, chunk_tokens
from mlcx.runtime.core.scheduler_output import Scheduled, SchedulerOutput, SchedulerStats
from mlcx.runtime.core.sequence import Request, Sequence, SequenceStatus
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.lora.slots import LoraRef

RUNNING, WAITING = SequenceStatus.RUNNING, SequenceStatus.WAITING


class Scheduler:
    def __init__(self, kv: KVCacheManager, max_batch: int, token_budget: int, kv_window: int = 0):
        if max_batch < 1 or token_budget < 1:
            raise ValueError("max_batch and token_budget must be positive")
        self.kv = kv
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
        """Queue a request's first choice; returns its sequence. `lora`: its adapter, which
        keys its prefix-cache blocks apart from other adapters' (and the base model's)."""
        if request_id in self.requests:
            raise ValueError(f"request {request_id!r} is already in flight")
        if not prompt_ids:
            raise ValueError("the prompt is empty; give at least one token")
        if n < 1 or max_new_tokens < 1:
            raise ValueError(f"n ({n}) and max_new_tokens ({max_new_tokens}) must be positive")
        stops = frozenset(stop_token_ids)
        request = Request(request_id, n, max_new_tokens, stops, images=images, lora=lora)
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
        if seq.seq_id in self.kv:
            self.kv.free(seq.seq_id)
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
            draft = self._fitting_draft(seq, (drafts or {}).get(seq.seq_id, ()), budget)
            if n and self._reserve(seq, n, out, draft):
                budget -= n + len(draft)
        if out.preempted:
            return out
        while self.waiting and budget > 0 and len(self.running) < self.max_batch:
            admitted = self._admit(self.waiting[0], budget, out)
            if admitted == 0:
                break
            budget -= admitted
        return out

    def update_from_output(
        self, out: SchedulerOutput, sampled: Seq[int | Seq[int]]
    ) -> list[Sequence]:
        """Apply a step that ran: `sampled` holds one token per `out.samples` entry, or for a
        drafted one its accepted drafts and one more token. Returns the sequences that
        received them, in that order (some finished now, maybe before their last token)."""
        if len(sampled) != len(out.samples):
            raise ValueError(f"{len(sampled)} sampled tokens for {len(out.samples)} samples")
        tokens = [[int(t)] if np.ndim(t) == 0 else [int(x) for x in t] for t in sampled]
        for item, item_tokens in zip(out.scheduled, self._per_item(out, tokens), strict=True):
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

    def _fitting_draft(self, seq: Sequence, draft: Seq[int], budget: int) -> tuple[int, ...]:
        """The part of `draft` this step can verify: within the token budget, and only with
        blocks to spare for every running sequence's next token (a new page and a
        copy-on-write at most), so that no draft ever causes a preemption."""
        draft = tuple(draft[: max(budget - 1, 0)]) if seq.num_pending == 1 else ()
        if not draft:
            return ()
        needed = self.kv.blocks_needed(seq.seq_id, 1 + len(draft))
        if needed + 2 * len(self.running) > self.kv.pool.num_free:
            return ()
        return draft

    def _per_item(self, out: SchedulerOutput, tokens: list[list[int]]) -> list[list[int]]:
        """Each scheduled item's first sample's tokens ([] for a prefill chunk)."""
        per_item, i = [], 0
        for item in out.scheduled:
            per_item.append(tokens[i] if item.choices else [])
            i += len(item.choices)
        return per_item

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
        self.kv.free(seq.seq_id)
        seq.num_computed = 0
        seq.status = WAITING
        self.waiting.appendleft(seq)
        out.preempted.append(seq)
        self.stats.preemptions += 1

    def _admit(self, seq: Sequence, budget: int, out: SchedulerOutput) -> int:
        seq.num_computed = self.kv.add_sequence(seq.seq_id, self._cache_ids(seq))
        n = self._chunk(seq, min(seq.num_pending, budget))
        if not n or not self.kv.can_append(seq.seq_id, n):
            self.kv.free(seq.seq_id)
            seq.num_computed = 0
            return 0
        self.waiting.popleft()
        self.running.append(seq)
        seq.status = RUNNING
        self.stats.prefix_hit_tokens += seq.num_computed
        self.stats.prefix_query_tokens += seq.num_tokens
        self._schedule(seq, n, out)
        return n

    def _chunk(self, seq: Sequence, n: int) -> int:
        """n, or fewer tokens where n would cut an image (core/images.py)."""
        return chunk_tokens(self.requests[seq.request_id].images, seq.num_computed, n)

    def _cache_ids(self, seq: Sequence) -> list[int]:
        request = self.requests[seq.request_id]
        ids = cache_ids(seq.token_ids, request.images)
        return ids if request.lora is None else request.lora.salted(ids)

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
