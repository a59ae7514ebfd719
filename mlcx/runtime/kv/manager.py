"""Which KV cache blocks each sequence uses, with prefix sharing and copy-on-write forks.

Life of a sequence, one forward step at a time:

    cached = manager.add_sequence(seq_id, prompt)      # reuses cached prefix blocks
    copies = manager.append(seq_id, len(prompt) - cached)  # reserves slots (may raise OutOfBlocks)
    arrays = manager.build_arrays([(seq_id, len(prompt) - cached), ...])
    ... the runner copies `copies` pages, runs the model, samples `token` ...
    manager.commit(seq_id, prompt)                      # written blocks become shareable
    copies = manager.append(seq_id, 1)                  # next decode step, and so on
    copies = manager.append(seq_id, 1 + k)              # or a step verifying k drafted tokens,
    manager.truncate(seq_id, accepted_len)              # rolled back before its commit
    manager.free(seq_id)                                # on finish or abort

The manager knows no tensors: block ids are page indices into the runner's per-layer
`pages[num_blocks, 2, h_kv, page_size, head_dim]` tensors. Nor does it keep token ids or
count computed tokens: those belong to the scheduler's sequence, which hands its token ids
over where blocks are hashed.
"""

from collections.abc import Mapping, Sequence

from mlcx.runtime.kv.block_pool import BlockPool, OutOfBlocks
from mlcx.runtime.kv.page_tables import (
    PageTableArrays,
    SequenceStep,
    build_page_table_arrays,
    span_steps,
    token_steps,
)
from mlcx.runtime.kv.prefix_cache import cached_prefix, register_full_blocks
from mlcx.runtime.kv.sequence_blocks import RELEASED, SeqId, SequenceBlocks

_MAX_SLOT = 2**31 - 1


class KVCacheManager:
    """Allocates KV cache blocks to sequences and builds the kernels' page-table arrays."""

    def __init__(self, num_blocks: int, page_size: int, enable_prefix_caching: bool = True) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        if num_blocks * page_size - 1 > _MAX_SLOT:
            raise ValueError(
                f"{num_blocks} blocks of {page_size} tokens overflow the int32 slot indices"
            )
        self._pool = BlockPool(num_blocks)
        self._page_size = page_size
        self._prefix_caching = enable_prefix_caching
        self._seqs: dict[SeqId, SequenceBlocks] = {}

    # -- read-only views ------------------------------------------------------------------

    @property
    def pool(self) -> BlockPool:
        return self._pool

    @property
    def page_size(self) -> int:
        return self._page_size

    @property
    def enable_prefix_caching(self) -> bool:
        return self._prefix_caching

    def usage(self) -> float:
        """Blocks held by live sequences / all blocks; unreferenced cached blocks count as free."""
        return self._pool.usage()

    def __contains__(self, seq_id: object) -> bool:
        return seq_id in self._seqs

    def __len__(self) -> int:
        return len(self._seqs)

    def num_tokens(self, seq_id: SeqId) -> int:
        """Tokens whose KV is written or reserved."""
        return self._get(seq_id).num_tokens

    def page_table(self, seq_id: SeqId) -> tuple[int, ...]:
        return tuple(self._get(seq_id).page_table)

    def block_hashes(self, seq_id: SeqId) -> tuple[int, ...]:
        """Prefix hashes of the sequence's full, committed blocks (none without prefix
        caching): entry i names the prefix that ends with block i."""
        return tuple(self._get(seq_id).block_hashes)

    # -- sequence life cycle --------------------------------------------------------------

    def match_prefix(self, prompt_token_ids: Sequence[int]) -> int:
        """Prompt tokens `add_sequence` would find cached now; changes nothing."""
        return len(self._match(prompt_token_ids)[0]) * self._page_size

    def cached_prefix_hashes(self, prompt_token_ids: Sequence[int]) -> list[int]:
        """The prefix hashes of the prompt blocks `add_sequence` would find cached now."""
        return self._match(prompt_token_ids)[1]

    def add_sequence(
        self, seq_id: SeqId, prompt_token_ids: Sequence[int], max_blocks: int | None = None
    ) -> int:
        """Register a sequence, reusing the longest cached chain of full prompt blocks (at
        most `max_blocks`: a hybrid model resumes only where its state was saved).

        At least one prompt token is always left uncached so that the model computes the
        logits of the last one. Returns the number of prompt tokens already in the cache;
        the caller reserves the others with `append(seq_id, len(prompt) - returned)`. Never
        allocates, so it never raises `OutOfBlocks`.
        """
        if seq_id in self._seqs:
            raise ValueError(f"sequence {seq_id!r} is already registered")
        if len(prompt_token_ids) == 0:
            raise ValueError("the prompt must contain at least one token")
        blocks, hashes = self._match(prompt_token_ids)
        if max_blocks is not None:
            blocks, hashes = blocks[:max_blocks], hashes[:max_blocks]
        for block_id in blocks:
            self._pool.touch(block_id)
        num_hit = len(blocks) * self._page_size
        self._seqs[seq_id] = SequenceBlocks(blocks, num_hit, hashes)
        return num_hit

    def blocks_needed(self, seq_id: SeqId, num_tokens: int) -> int:
        """Free blocks `append` needs for `num_tokens` more tokens, copy-on-write included."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be non-negative, got {num_tokens}")
        seq = self._get(seq_id)
        if num_tokens == 0:
            return 0
        total_blocks = -(-(seq.num_tokens + num_tokens) // self._page_size)
        return total_blocks - len(seq.page_table) + int(self._needs_copy_on_write(seq))

    def can_append(self, seq_id: SeqId, num_tokens: int) -> bool:
        """Whether `append` of `num_tokens` tokens would succeed now."""
        return self.blocks_needed(seq_id, num_tokens) <= self._pool.num_free

    def append(self, seq_id: SeqId, num_tokens: int) -> list[tuple[int, int]]:
        """Reserve slots for `num_tokens` more tokens, whose KV the next forward step writes.

        All or nothing: raises `OutOfBlocks` and changes nothing if blocks are short.
        Returns `(src_block, dst_block)` page copies the runner must do, in order, before the
        forward: a partially filled last block shared with a fork is copied on first write.
        """
        needed = self.blocks_needed(seq_id, num_tokens)
        if num_tokens == 0:
            return []
        if needed > self._pool.num_free:
            raise OutOfBlocks(needed=needed, available=self._pool.num_free)
        seq = self._get(seq_id)
        copies = [self._copy_last_block(seq)] if self._needs_copy_on_write(seq) else []
        total_blocks = -(-(seq.num_tokens + num_tokens) // self._page_size)
        seq.page_table.extend(self._pool.allocate_many(total_blocks - len(seq.page_table)))
        seq.num_tokens += num_tokens
        return copies

    def build_arrays(
        self,
        batch: Sequence[tuple[SeqId, int]],
        row_per_token: bool = False,
        spans: Mapping[SeqId, Sequence[tuple[int, int]]] | None = None,
    ) -> PageTableArrays:
        """Kernel inputs for one forward step over `(seq_id, num_new_tokens)` pairs.

        The new tokens are each sequence's last `num_new_tokens` slots, those reserved with
        `append` since the last `commit`; the step computes all of them. `row_per_token`:
        every new token as a batch row of its own (a decode step), over its own prefix.
        `spans`: per sequence, [start, end) positions attended to bidirectionally (images).
        """
        if len({seq_id for seq_id, _ in batch}) != len(batch):
            raise ValueError("a sequence appears more than once in the batch")
        seqs = [(self._get(seq_id), num_new) for seq_id, num_new in batch]
        steps = [SequenceStep(seq.page_table, seq.num_tokens, num_new) for seq, num_new in seqs]
        if row_per_token:
            steps = [row for step in steps for row in token_steps(step, self._page_size)]
        elif spans:
            steps = [
                row
                for (seq_id, _), step in zip(batch, steps, strict=True)
                for row in span_steps(step, spans.get(seq_id, ()), self._page_size)
            ]
        return build_page_table_arrays(steps, self._page_size)

    def commit(self, seq_id: SeqId, token_ids: Sequence[int]) -> None:
        """The forward step wrote every reserved slot: newly full blocks join the prefix cache.

        `token_ids` are the sequence's tokens, at least one per slot; the manager hashes the
        full blocks' tokens and keeps only the hashes. Separate from `append` because a block
        may only be shared once its KV is on the device, i.e. after the forward step ran.
        """
        seq = self._get(seq_id)
        if len(token_ids) < seq.num_tokens:
            raise ValueError(
                f"sequence {seq_id!r} has {seq.num_tokens} slot(s), "
                f"commit got {len(token_ids)} token id(s)"
            )
        if self._prefix_caching:
            register_full_blocks(self._pool, self._page_size, seq, token_ids)

    def fork(self, parent_id: SeqId, child_id: SeqId) -> None:
        """Register `child_id` sharing every block of `parent_id`.

        Fork after the parent's forward step and `commit`, so the child shares written KV. A
        shared partially filled last block is copied on the first `append` of either sequence.
        """
        parent = self._get(parent_id)
        if child_id in self._seqs:
            raise ValueError(f"sequence {child_id!r} is already registered")
        for block_id in _held(parent.page_table):
            self._pool.touch(block_id)
        self._seqs[child_id] = parent.copy()

    def truncate(self, seq_id: SeqId, num_tokens: int) -> None:
        """Roll a sequence back to its first `num_tokens` slots (speculative tokens rejected).

        Blocks past the new length lose this sequence's reference. A block this sequence alone
        holds that caches a prefix reaching past the new length leaves the prefix cache: its
        hash names tokens that were rolled back, and the kept part of it will be overwritten.
        A shared block keeps its hash (its other holders still have all of it); the next
        `append` copies a shared partial last block first (copy-on-write), as after a fork.
        """
        seq = self._get(seq_id)
        if not 0 < num_tokens <= seq.num_tokens:
            raise ValueError(
                f"sequence {seq_id!r} can be truncated to 1..{seq.num_tokens} tokens, "
                f"not {num_tokens}"
            )
        keep_blocks = -(-num_tokens // self._page_size)
        full_blocks = num_tokens // self._page_size
        for i in range(len(seq.page_table) - 1, full_blocks - 1, -1):
            block_id = seq.page_table[i]
            if self._pool.refcount(block_id) == 1:
                self._pool.unregister(block_id)
            if i >= keep_blocks:
                self._pool.free(block_id)
        del seq.page_table[keep_blocks:]
        del seq.block_hashes[full_blocks:]
        seq.num_tokens = num_tokens

    def free(self, seq_id: SeqId) -> None:
        """Release a finished or aborted sequence; its cached blocks stay evictable."""
        seq = self._seqs.pop(seq_id, None)
        if seq is None:
            raise KeyError(f"cannot free unknown (or already freed) sequence {seq_id!r}")
        # Tail blocks go first into the LRU queue so they are evicted before the prefix
        # blocks, which other prompts are more likely to share.
        for block_id in reversed(_held(seq.page_table)):
            self._pool.free(block_id)

    def release_outside_window(self, seq_id: SeqId, window: int) -> int:
        """Release the blocks no later query can see when every layer attends only to its
        last `window` keys; returns how many were released.

        Call after `commit`. The next query sits at position num_tokens, so keys before
        num_tokens - window + 1 are never read again; their page-table entries become RELEASED
        placeholders (the windowed attention kernels skip those pages). Only for models whose
        every layer is windowed: a model with any full-attention layer must keep every page.
        """
        if window < 1:
            raise ValueError(f"window must be positive, got {window}")
        seq = self._get(seq_id)
        first_needed = max(0, seq.num_tokens - window + 1)
        released = 0
        for i in range(first_needed // self._page_size):
            if seq.page_table[i] != RELEASED:
                self._pool.free(seq.page_table[i])
                seq.page_table[i] = RELEASED
                released += 1
        return released

    # -- internals ------------------------------------------------------------------------

    def _get(self, seq_id: SeqId) -> SequenceBlocks:
        seq = self._seqs.get(seq_id)
        if seq is None:
            raise KeyError(f"unknown sequence {seq_id!r}")
        return seq

    def _match(self, prompt_token_ids: Sequence[int]) -> tuple[list[int], list[int]]:
        if not self._prefix_caching:
            return [], []
        return cached_prefix(self._pool, self._page_size, prompt_token_ids)

    def _needs_copy_on_write(self, seq: SequenceBlocks) -> bool:
        last_is_partial = seq.num_tokens % self._page_size != 0
        return last_is_partial and self._pool.refcount(seq.page_table[-1]) > 1

    def _copy_last_block(self, seq: SequenceBlocks) -> tuple[int, int]:
        src = seq.page_table[-1]
        dst = self._pool.allocate()
        seq.page_table[-1] = dst
        # The other holders keep src referenced, so it is not reallocated before the copy.
        self._pool.free(src)
        return src, dst


def _held(page_table: list[int]) -> list[int]:
    return [block_id for block_id in page_table if block_id != RELEASED]
