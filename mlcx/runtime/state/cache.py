"""Which state slot each running sequence holds, and the checkpoints that let a hybrid
sequence resume from a cached prefix.

A hybrid model's state layers keep one fixed-size state per sequence (state_tensors.py in
mlcx/artifact). The scheduler asks this cache, beside the KV cache manager:

    cache.can_admit(choices)              # a slot for each choice (forks take theirs later)
    resume = cache.resume(prompt_ids)     # the longest cached prefix with a saved state
    kv.add_sequence(seq_id, prompt_ids, max_blocks=resume.blocks)
    cache.admit(seq_id, choices, resume)  # the slot; restores the saved state into it
    n = cache.chunk(computed, total, n)   # a prefill chunk ends where a save pays
    cache.committed(seq_id, computed, total)  # after the step: save at a block boundary
    cache.fork(parent_id, child_id)       # n > 1: the child's slot gets the parent's state
    cache.release(seq_id)                 # every end: finish, abort, preemption
    step = cache.take(seq_ids)            # each step: slots in step order, copies to do
    cache.done(step)                      # the step ran: its saves are published

Saves: a checkpoint is the state after a sequence's first `p` tokens, `p` a block boundary,
kept in a slot of its own under the prefix hash of the KV block ending at `p` (the key the KV
prefix cache uses), so a later prompt resumes from the longest prefix whose pages are cached and
whose state was saved. A sequence saves where it pays: at its prompt's last full block (the
prefill is cut there), then at each block boundary while it decodes, keeping only the latest of
those (at its end: the end of a chat turn, which the next turn resumes from). A save is a copy
done before the next step, where a restore from it may follow (copies keep their order); it is
published once that step ran (a failed step's saves are abandoned). Checkpoints live in the
slots no running sequence holds and are evicted least recently used first, as unreferenced KV
pages are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlcx.errors import InvalidFieldError
from mlcx.runtime.kv import KVCacheManager, SeqId
from mlcx.runtime.state.copies import Copy, copy_waves
from mlcx.runtime.state.slot_pool import SlotPool


@dataclass(frozen=True)
class Resume:
    blocks: int | None  # leading cached KV blocks a sequence may reuse; None: all
    matched: int = 0  # leading prompt blocks the KV prefix cache holds
    key: int | None = None  # the checkpoint to restore (the hash of block `blocks - 1`)


@dataclass(frozen=True)
class StateStep:
    """A step's share of the state cache: each sequence's slot in step order (None for a
    model without state), the copies to do before it in waves, the saves it completes."""

    slots: np.ndarray | None = None  # int32 [batch]
    copies: list[list[Copy]] = field(default_factory=list)
    saves: list[tuple[int, int]] = field(default_factory=list)  # (slot, key)


@dataclass(frozen=True)
class StateStats:
    slots_in_use: int  # held by running sequences
    checkpoints: int  # saved states held (findable)
    checkpoint_hits: int  # admissions that resumed from a saved state
    hits_without_state: int  # admissions whose cached pages reached past the last saved state
    tokens_without_state: int  # cached prompt tokens recomputed for want of a saved state


NO_RESUME = Resume(None)
NO_STEP = StateStep()


class SequenceStates:
    """A model without state layers: every call is a no-op and the KV cache decides alone."""

    def check_choices(self, n: int) -> None:
        pass

    def can_admit(self, choices: int) -> bool:
        return True

    def resume(self, token_ids: list[int]) -> Resume:
        return NO_RESUME

    def admit(self, seq_id: SeqId, choices: int, resume: Resume) -> None:
        pass

    def chunk(self, computed: int, total: int, n: int) -> int:
        return n

    def committed(self, seq_id: SeqId, computed: int, total: int) -> None:
        pass

    def fork(self, parent_id: SeqId, child_id: SeqId) -> None:
        pass

    def release(self, seq_id: SeqId) -> None:
        pass

    def take(self, seq_ids: list[SeqId]) -> StateStep:
        return NO_STEP

    def done(self, step: StateStep) -> None:
        pass

    def stats(self) -> StateStats | None:
        return None


NO_STATES = SequenceStates()


class StateCache(SequenceStates):
    def __init__(self, kv: KVCacheManager, num_slots: int, max_live: int) -> None:
        if not 1 <= max_live <= num_slots:
            raise ValueError(f"max_live must be in 1..num_slots ({num_slots}), got {max_live}")
        self.pool = SlotPool(num_slots)
        self.kv = kv
        self.max_live = max_live
        self._page = kv.page_size
        self._saving = kv.enable_prefix_caching and num_slots > max_live
        self._slots: dict[SeqId, int] = {}
        self._reserved: dict[SeqId, int] = {}  # slots promised to a request's forks
        self._made: dict[SeqId, list[int]] = {}  # keys each live sequence saved
        self._copies: list[Copy] = []
        self._pending: dict[int, int] = {}  # key -> slot of saves not yet taken into a step
        self._in_flight: dict[int, int] = {}  # saves taken, their step not done yet
        self._hits = self._short_hits = self._short_tokens = 0

    # -- admission ------------------------------------------------------------------------
    def check_choices(self, n: int) -> None:
        if n > self.max_live:
            raise InvalidFieldError(
                f"n={n} choices need {n} state slots, but this hybrid model runs at most "
                f"{self.max_live} sequences (max_batch); lower n or raise --max-batch",
                param="n",
            )

    def can_admit(self, choices: int) -> bool:
        return len(self._slots) + sum(self._reserved.values()) + choices <= self.max_live

    def resume(self, token_ids: list[int]) -> Resume:
        hashes = self.kv.cached_prefix_hashes(token_ids)
        blocks = len(hashes)
        while blocks and self._saved(hashes[blocks - 1]) is None:
            blocks -= 1
        return Resume(blocks, len(hashes), hashes[blocks - 1] if blocks else None)

    def admit(self, seq_id: SeqId, choices: int, resume: Resume) -> None:
        if seq_id in self._slots:
            raise ValueError(f"sequence {seq_id!r} holds a state slot already")
        # the checkpoint becomes the most recently used before the allocation, which evicts
        # it only when it is the last free slot: then the sequence takes it as it is
        src = None if resume.key is None else self._checkpoint(resume.key)
        slot = self._slots[seq_id] = self.pool.allocate()
        self._made[seq_id] = []
        if choices > 1:
            self._reserved[seq_id] = choices - 1
        if src is not None:
            self._copies.append((src, slot))  # copy_waves drops it where src == slot
            self._hits += 1
        if resume.blocks is not None and resume.matched > resume.blocks:
            self._short_hits += 1
            self._short_tokens += (resume.matched - resume.blocks) * self._page

    def fork(self, parent_id: SeqId, child_id: SeqId) -> None:
        if self._reserved.get(parent_id, 0) < 1:
            raise ValueError(f"sequence {parent_id!r} has no state slot reserved for a fork")
        self._reserved[parent_id] -= 1
        if not self._reserved[parent_id]:
            del self._reserved[parent_id]
        slot = self._slots[child_id] = self.pool.allocate()
        self._made[child_id] = []
        self._copies.append((self._slots[parent_id], slot))

    def release(self, seq_id: SeqId) -> None:
        """Free the sequence's slot (and any slots promised to its forks); the one call every
        path a sequence ends on makes. Its checkpoints stay."""
        slot = self._slots.pop(seq_id, None)
        if slot is not None:
            self.pool.free(slot)
        self._reserved.pop(seq_id, None)
        self._made.pop(seq_id, None)

    # -- saves ----------------------------------------------------------------------------
    def chunk(self, computed: int, total: int, n: int) -> int:
        """A prefill chunk of `n` tokens cut at the last block boundary before the sequence's
        last token, so that the state there can be saved."""
        boundary = (total - 1) // self._page * self._page
        if self._saving and computed < boundary < computed + n:
            return boundary - computed
        return n

    def committed(self, seq_id: SeqId, computed: int, total: int) -> None:
        """The step ran: the sequence's state is after `computed` tokens of `total` (sampled
        tokens included). Saves it there if that is its last block boundary before `total`."""
        if not self._saving or computed % self._page or total - computed > self._page:
            return
        key = self.kv.block_hashes(seq_id)[computed // self._page - 1]
        if self.pool.lookup(key) is not None:
            self.pool.touch(key)
            return
        if key in self._pending or key in self._in_flight or not self._room():
            return
        slot = self._pending[key] = self.pool.allocate()
        self._copies.append((self._slots[seq_id], slot))
        made = self._made[seq_id]
        if len(made) > 1 and self.pool.lookup(made[-1]) is not None:
            self.pool.drop(made.pop())  # the previous boundary of the same decode
        made.append(key)

    def take(self, seq_ids: list[SeqId]) -> StateStep:
        """The next step's slots and copies; saves of a step that never completed are lost."""
        for slot in self._in_flight.values():
            self.pool.free(slot)
        slots = np.array([self._slots[s] for s in seq_ids], dtype=np.int32)
        saves = [(slot, key) for key, slot in self._pending.items()]
        step = StateStep(slots, copy_waves(self._copies), saves)
        self._in_flight, self._pending, self._copies = self._pending, {}, []
        return step

    def done(self, step: StateStep) -> None:
        """The step ran: publish its saves (those of the step taken last; an older step's
        were abandoned)."""
        for slot, key in step.saves:
            if self._in_flight.get(key) == slot:
                del self._in_flight[key]
                self.pool.publish(slot, key)

    def stats(self) -> StateStats:
        return StateStats(
            slots_in_use=len(self._slots),
            checkpoints=self.pool.num_checkpoints,
            checkpoint_hits=self._hits,
            hits_without_state=self._short_hits,
            tokens_without_state=self._short_tokens,
        )

    def slot_of(self, seq_id: SeqId) -> int:
        return self._slots[seq_id]

    def _saved(self, key: int) -> int | None:
        """The slot holding the state saved under `key`: a checkpoint, or a save this step's
        copies make before any restore."""
        slot = self.pool.lookup(key)
        return self._pending.get(key) if slot is None else slot

    def _checkpoint(self, key: int) -> int:
        slot = self._saved(key)
        if slot is None:
            raise KeyError(f"no state is saved under key {key:#x}")
        if self.pool.lookup(key) is not None:
            self.pool.touch(key)
        return slot

    def _room(self) -> bool:
        """Whether a save may hold a slot: free slots beyond those live sequences may claim."""
        claimable = self.max_live - len(self._slots) - sum(self._reserved.values())
        return self.pool.num_free > claimable
