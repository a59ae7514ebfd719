"""Iteration-level scheduling over mlcx's KV cache manager.

Every step: running sequences first (decodes take one token; unfinished prefills take a chunk
of the token budget), then waiting sequences are admitted while the running set, the token
budget and the free KV blocks allow. A long prompt is prefilled a chunk per step, so running
decodes keep moving. When blocks run out, the youngest running sequence is preempted: its
blocks are freed and it waits to be recomputed (its full blocks usually stay in the prefix
cache, so recomputing is cheap). No sequence is admitted in a step that preempted one: the
blocks just freed belong to the sequences that needed them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.sequence import Sequence


@dataclass(frozen=True)
class Scheduled:
    seq: Sequence
    num_new: int


@dataclass
class SchedulerOutput:
    scheduled: list[Scheduled] = field(default_factory=list)
    copies: list[tuple[int, int]] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)


class Scheduler:
    def __init__(self, kv: KVCacheManager, max_running: int, token_budget: int):
        if max_running < 1 or token_budget < 1:
            raise ValueError("max_running and token_budget must be positive")
        self.kv = kv
        self.max_running = max_running
        self.token_budget = token_budget
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        # Counted on admission only (a failed admission attempt is retried every step).
        # Recomputing a preempted sequence counts again: its own cached blocks are hits.
        self.prefix_hit_tokens = 0
        self.prefix_query_tokens = 0
        self.preemptions = 0

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def add_running(self, seq: Sequence) -> None:
        """A sequence that already holds KV blocks (a fork) joins the running set."""
        self.running.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def remove(self, seq: Sequence) -> None:
        """Drop a finished or aborted sequence and release its KV blocks."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        if seq.seq_id in self.kv:
            self.kv.free(seq.seq_id)

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self.token_budget
        decodes = [s for s in self.running if s.num_pending == 1]
        prefills = [s for s in self.running if s.num_pending > 1]
        for seq in decodes + prefills:
            if seq not in self.running:  # preempted earlier in this step
                continue
            n = min(seq.num_pending, budget)
            if n == 0:
                continue
            if self._reserve(seq, n, out):
                budget -= n
        if out.preempted:
            return out
        while self.waiting and budget > 0 and len(self.running) < self.max_running:
            admitted = self._admit(self.waiting[0], budget, out)
            if admitted == 0:
                break
            budget -= admitted
        return out

    def _reserve(self, seq: Sequence, n: int, out: SchedulerOutput) -> bool:
        while not self.kv.can_append(seq.seq_id, n):
            victim = self.running[-1]
            self._preempt(victim, out)
            if victim is seq:
                return False
        out.copies += self.kv.append(seq.seq_id, n)
        out.scheduled.append(Scheduled(seq, n))
        return True

    def _preempt(self, seq: Sequence, out: SchedulerOutput) -> None:
        self.running.remove(seq)
        out.scheduled = [s for s in out.scheduled if s.seq is not seq]
        self.kv.free(seq.seq_id)
        seq.num_computed = 0
        self.waiting.appendleft(seq)
        out.preempted.append(seq)
        self.preemptions += 1

    def _admit(self, seq: Sequence, budget: int, out: SchedulerOutput) -> int:
        seq.num_computed = self.kv.add_sequence(seq.seq_id, seq.all_ids)
        n = min(seq.num_pending, budget)
        if not self.kv.can_append(seq.seq_id, n):
            self.kv.free(seq.seq_id)
            seq.num_computed = 0
            return 0
        self.waiting.popleft()
        self.running.append(seq)
        self.prefix_hit_tokens += seq.num_computed
        self.prefix_query_tokens += seq.num_tokens
        out.copies += self.kv.append(seq.seq_id, n)
        out.scheduled.append(Scheduled(seq, n))
        return n
