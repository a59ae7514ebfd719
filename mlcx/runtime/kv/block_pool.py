"""Reference-counted KV cache blocks with a content-addressed prefix cache."""

from mlcx.runtime.kv.free_queue import FreeBlockQueue


class OutOfBlocks(Exception):
    """Not enough free KV cache blocks; the engine reacts by preempting or waiting.

    Engine-internal, hence not an `MlcxError`.
    """

    def __init__(self, needed: int, available: int) -> None:
        super().__init__(f"need {needed} free KV cache block(s) but only {available} are available")
        self.needed = needed
        self.available = available


class BlockPool:
    """Block ids `0..num_blocks-1`, each with a reference count and an optional prefix hash.

    Invariants:
    - a block is in the free queue if and only if its reference count is 0;
    - `lookup(h) == b` if and only if `block_hash(b) == h`;
    - a free block that carries a hash is "evictable": it keeps its cached prefix until
      `allocate` hands it out again.
    """

    def __init__(self, num_blocks: int) -> None:
        if num_blocks < 1:
            raise ValueError(f"num_blocks must be at least 1, got {num_blocks}")
        self._num_blocks = num_blocks
        self._refcounts = [0] * num_blocks
        self._hashes: list[int | None] = [None] * num_blocks
        self._cached: dict[int, int] = {}
        self._free = FreeBlockQueue(range(num_blocks))

    @property
    def num_blocks(self) -> int:
        return self._num_blocks

    @property
    def num_free(self) -> int:
        """Blocks `allocate` can hand out now: truly free plus evictable cached ones."""
        return len(self._free)

    @property
    def num_used(self) -> int:
        """Blocks with a reference count above 0."""
        return self._num_blocks - len(self._free)

    @property
    def num_cached(self) -> int:
        """Blocks carrying a prefix hash, referenced or not."""
        return len(self._cached)

    def usage(self) -> float:
        """Fraction of all blocks that are referenced."""
        return self.num_used / self._num_blocks

    def refcount(self, block_id: int) -> int:
        self._check_id(block_id)
        return self._refcounts[block_id]

    def block_hash(self, block_id: int) -> int | None:
        self._check_id(block_id)
        return self._hashes[block_id]

    def free_order(self) -> list[int]:
        """Free block ids in the order `allocate` will hand them out."""
        return self._free.order()

    def allocate(self) -> int:
        """Take the front block of the free queue (evicting its cached prefix) with refcount 1."""
        if not self._free:
            raise OutOfBlocks(needed=1, available=0)
        block_id = self._free.pop()
        self._evict(block_id)
        self._refcounts[block_id] = 1
        return block_id

    def allocate_many(self, count: int) -> list[int]:
        """Allocate `count` blocks, or raise `OutOfBlocks` and allocate none."""
        if count < 0:
            raise ValueError(f"count must be non-negative, got {count}")
        if count > self.num_free:
            raise OutOfBlocks(needed=count, available=self.num_free)
        return [self.allocate() for _ in range(count)]

    def touch(self, block_id: int) -> None:
        """Add a reference to a block that is referenced already or holds a cached prefix."""
        self._check_id(block_id)
        if self._refcounts[block_id] == 0:
            if self._hashes[block_id] is None:
                raise ValueError(
                    f"block {block_id} is free and holds no cached prefix; allocate a block instead"
                )
            self._free.remove(block_id)
        self._refcounts[block_id] += 1

    def free(self, block_id: int) -> None:
        """Drop one reference; at 0 the block returns to the free queue, keeping its prefix."""
        self._check_id(block_id)
        if self._refcounts[block_id] == 0:
            raise ValueError(f"block {block_id} is already free")
        self._refcounts[block_id] -= 1
        if self._refcounts[block_id] > 0:
            return
        if self._hashes[block_id] is None:
            self._free.push_empty(block_id)
        else:
            self._free.push_evictable(block_id)

    def lookup(self, block_hash: int) -> int | None:
        """The block caching the prefix with this hash, if any (no reference is taken)."""
        return self._cached.get(block_hash)

    def register(self, block_id: int, block_hash: int) -> bool:
        """Make a referenced, fully written block findable by `lookup(block_hash)`.

        Returns False (and changes nothing) when another block already caches that prefix.
        """
        self._check_id(block_id)
        if self._refcounts[block_id] == 0:
            raise ValueError(f"block {block_id} is free; only referenced blocks can be cached")
        current = self._hashes[block_id]
        if current == block_hash:
            return True
        if current is not None:
            raise ValueError(f"block {block_id} already caches a different prefix")
        if block_hash in self._cached:
            return False
        self._cached[block_hash] = block_id
        self._hashes[block_id] = block_hash
        return True

    def unregister(self, block_id: int) -> None:
        """Forget a block's cached prefix (its KV is about to be overwritten or was rolled
        back); a no-op for a block that caches none. Free blocks move to the empty segment."""
        self._check_id(block_id)
        if self._hashes[block_id] is None:
            return
        self._evict(block_id)
        if self._refcounts[block_id] == 0:
            self._free.remove(block_id)
            self._free.push_empty(block_id)

    def _evict(self, block_id: int) -> None:
        block_hash = self._hashes[block_id]
        if block_hash is not None:
            del self._cached[block_hash]
            self._hashes[block_id] = None

    def _check_id(self, block_id: int) -> None:
        if not 0 <= block_id < self._num_blocks:
            raise ValueError(f"block id {block_id} is out of range 0..{self._num_blocks - 1}")
