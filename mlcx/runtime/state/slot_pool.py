"""State slot ids with a content-addressed cache of saved states (checkpoints), no tensors."""

from __future__ import annotations

from mlcx.runtime.kv.free_queue import FreeBlockQueue


class OutOfSlots(Exception):
    """No state slot can be handed out now; engine-internal (the scheduler checks first)."""

    def __init__(self) -> None:
        super().__init__("every state slot is held by a running sequence or a pending save")


class SlotPool:
    """Slot ids `0..num_slots-1`, each held (by a running sequence, or a checkpoint being
    written) or free; a free slot may keep a checkpoint: a saved state found by the prefix hash
    it was saved under.

    Invariants (those of the KV block pool, with references 0 or 1):
    - a slot is in the free queue if and only if it is not held;
    - only free slots keep checkpoints, and `lookup(k) == s` iff `key(s) == k`;
    - `allocate` hands out slots that keep nothing first (lowest id first at the start), then
      evicts the least recently used checkpoint.
    """

    def __init__(self, num_slots: int) -> None:
        if num_slots < 1:
            raise ValueError(f"num_slots must be at least 1, got {num_slots}")
        self._num_slots = num_slots
        self._held = [False] * num_slots
        self._keys: list[int | None] = [None] * num_slots
        self._saved: dict[int, int] = {}  # key -> slot
        self._free = FreeBlockQueue(range(num_slots))

    @property
    def num_slots(self) -> int:
        return self._num_slots

    @property
    def num_free(self) -> int:
        """Slots `allocate` can hand out now: empty ones plus checkpoints it may evict."""
        return len(self._free)

    @property
    def num_held(self) -> int:
        return self._num_slots - len(self._free)

    @property
    def num_checkpoints(self) -> int:
        return len(self._saved)

    def free_order(self) -> list[int]:
        """Free slots in the order `allocate` hands them out."""
        return self._free.order()

    def is_held(self, slot: int) -> bool:
        self._check(slot)
        return self._held[slot]

    def key(self, slot: int) -> int | None:
        """The prefix hash of the checkpoint `slot` keeps, if any."""
        self._check(slot)
        return self._keys[slot]

    def allocate(self) -> int:
        """Hold the front free slot, evicting the checkpoint it kept."""
        if not self._free:
            raise OutOfSlots()
        slot = self._free.pop()
        self._forget(slot)
        self._held[slot] = True
        return slot

    def free(self, slot: int) -> None:
        """Release a held slot; it keeps nothing."""
        self._check(slot)
        if not self._held[slot]:
            raise ValueError(f"state slot {slot} is not held")
        self._held[slot] = False
        self._free.push_empty(slot)

    def publish(self, slot: int, key: int) -> bool:
        """Release a held slot whose state was saved under `key` as a checkpoint (the most
        recently used). False, and the slot keeps nothing, when `key` is saved already."""
        self.free(slot)
        if key in self._saved:
            return False
        self._free.remove(slot)
        self._keys[slot] = key
        self._saved[key] = slot
        self._free.push_evictable(slot)
        return True

    def lookup(self, key: int) -> int | None:
        """The slot keeping the checkpoint saved under `key`, if any."""
        return self._saved.get(key)

    def touch(self, key: int) -> None:
        """Make a checkpoint the most recently used (it was just restored)."""
        slot = self._slot_of(key)
        self._free.remove(slot)
        self._free.push_evictable(slot)

    def drop(self, key: int) -> None:
        """Forget a checkpoint; its slot joins the empty ones (handed out before checkpoints)."""
        slot = self._slot_of(key)
        self._forget(slot)
        self._free.remove(slot)
        self._free.push_empty(slot)

    def _slot_of(self, key: int) -> int:
        slot = self._saved.get(key)
        if slot is None:
            raise KeyError(f"no checkpoint is saved under key {key:#x}")
        return slot

    def _forget(self, slot: int) -> None:
        key = self._keys[slot]
        if key is not None:
            del self._saved[key]
            self._keys[slot] = None

    def _check(self, slot: int) -> None:
        if not 0 <= slot < self._num_slots:
            raise ValueError(f"state slot {slot} is out of range 0..{self._num_slots - 1}")
