"""The queue of KV cache blocks that nothing references, in the order they are handed out."""

from collections import OrderedDict
from collections.abc import Iterable


class FreeBlockQueue:
    """Unreferenced blocks, split into two FIFO segments that `pop` drains in order.

    1. *empty* blocks hold no cached prefix; reusing them loses nothing.
    2. *evictable* blocks still hold a cached prefix; they are ordered from least to most
       recently freed, so `pop` evicts the least recently used prefix, and only once no empty
       block is left.

    Both segments are ordered dicts so that `remove` (a prefix-cache hit on an evictable block)
    is O(1).
    """

    def __init__(self, block_ids: Iterable[int] = ()) -> None:
        self._empty: OrderedDict[int, None] = OrderedDict.fromkeys(block_ids)
        self._evictable: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._empty) + len(self._evictable)

    def __contains__(self, block_id: object) -> bool:
        return block_id in self._empty or block_id in self._evictable

    def push_empty(self, block_id: int) -> None:
        """Append a block that holds no cached prefix."""
        self._check_absent(block_id)
        self._empty[block_id] = None

    def push_evictable(self, block_id: int) -> None:
        """Append a block that still holds a cached prefix (it becomes the most recently used)."""
        self._check_absent(block_id)
        self._evictable[block_id] = None

    def pop(self) -> int:
        """Remove and return the next block to hand out."""
        for segment in (self._empty, self._evictable):
            if segment:
                return segment.popitem(last=False)[0]
        raise IndexError("the free block queue is empty")

    def remove(self, block_id: int) -> None:
        """Take a block out of the queue wherever it is."""
        if self._empty.pop(block_id, _MISSING) is _MISSING and (
            self._evictable.pop(block_id, _MISSING) is _MISSING
        ):
            raise ValueError(f"block {block_id} is not in the free queue")

    def order(self) -> list[int]:
        """Block ids in the order `pop` would return them."""
        return [*self._empty, *self._evictable]

    def _check_absent(self, block_id: int) -> None:
        if block_id in self:
            raise ValueError(f"block {block_id} is already in the free queue")


_MISSING = object()
