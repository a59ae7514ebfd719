import pytest

from mlcx.runtime.kv import BlockPool, OutOfBlocks
from mlcx.runtime.kv.free_queue import FreeBlockQueue
from mlcx.runtime.kv.prefix_hash import hash_block


def test_allocates_in_id_order_with_refcount_one():
    pool = BlockPool(4)
    assert [pool.allocate() for _ in range(3)] == [0, 1, 2]
    assert [pool.refcount(b) for b in range(4)] == [1, 1, 1, 0]
    assert (pool.num_free, pool.num_used, pool.num_cached) == (1, 3, 0)
    assert pool.usage() == 0.75


def test_out_of_blocks_carries_counts_and_allocates_nothing():
    pool = BlockPool(4)
    pool.allocate_many(3)
    with pytest.raises(OutOfBlocks) as info:
        pool.allocate_many(2)
    assert (info.value.needed, info.value.available) == (2, 1)
    assert "need 2 free KV cache block(s) but only 1 are available" in str(info.value)
    assert pool.free_order() == [3]
    pool.allocate()
    with pytest.raises(OutOfBlocks) as info:
        pool.allocate()
    assert (info.value.needed, info.value.available) == (1, 0)


def test_freed_uncached_blocks_are_reused_fifo():
    pool = BlockPool(4)
    pool.allocate_many(4)
    pool.free(2)
    pool.free(0)
    assert pool.free_order() == [2, 0]
    assert pool.allocate_many(2) == [2, 0]


def test_cached_blocks_are_evicted_least_recently_freed_first():
    pool = BlockPool(4)
    pool.allocate_many(4)
    for block_id, block_hash in [(0, 100), (1, 101), (2, 102)]:
        assert pool.register(block_id, block_hash)
    for block_id in [2, 0, 3, 1]:
        pool.free(block_id)
    # Uncached block 3 first, then cached blocks in the order they were freed.
    assert pool.free_order() == [3, 2, 0, 1]
    assert (pool.num_free, pool.num_used, pool.num_cached) == (4, 0, 3)

    assert pool.allocate() == 3
    assert pool.num_cached == 3
    assert pool.allocate() == 2
    assert pool.lookup(102) is None
    assert pool.block_hash(2) is None
    assert (pool.lookup(100), pool.lookup(101)) == (0, 1)
    assert pool.num_cached == 2


def test_touch_revives_an_evictable_block_and_refreshes_its_lru_position():
    pool = BlockPool(3)
    pool.allocate_many(3)
    pool.register(0, 100)
    pool.register(1, 101)
    pool.free(0)
    pool.free(1)
    assert pool.free_order() == [0, 1]

    pool.touch(pool.lookup(100))
    assert pool.refcount(0) == 1
    assert pool.free_order() == [1]
    assert pool.num_free == 1
    pool.free(0)
    assert pool.free_order() == [1, 0]


def test_touch_of_a_referenced_block_only_increfs():
    pool = BlockPool(2)
    block_id = pool.allocate()
    pool.touch(block_id)
    assert pool.refcount(block_id) == 2
    pool.free(block_id)
    assert pool.refcount(block_id) == 1
    assert pool.free_order() == [1]


def test_touch_of_a_free_uncached_block_is_rejected():
    pool = BlockPool(2)
    with pytest.raises(ValueError, match="holds no cached prefix"):
        pool.touch(0)


def test_double_free_and_bad_ids_are_rejected():
    pool = BlockPool(2)
    block_id = pool.allocate()
    pool.free(block_id)
    with pytest.raises(ValueError, match="already free"):
        pool.free(block_id)
    with pytest.raises(ValueError, match="out of range"):
        pool.refcount(2)
    with pytest.raises(ValueError, match="at least 1"):
        BlockPool(0)
    with pytest.raises(ValueError, match="non-negative"):
        pool.allocate_many(-1)


def test_register_keeps_the_first_block_for_a_hash():
    pool = BlockPool(3)
    first, second = pool.allocate_many(2)
    assert pool.register(first, 7)
    assert pool.register(first, 7)
    assert not pool.register(second, 7)
    assert pool.lookup(7) == first
    assert pool.block_hash(second) is None
    with pytest.raises(ValueError, match="different prefix"):
        pool.register(first, 8)
    with pytest.raises(ValueError, match="only referenced blocks"):
        pool.register(2, 9)


def test_free_queue_remove_and_order():
    queue = FreeBlockQueue([0, 1, 2])
    queue.push_evictable(5)
    queue.remove(1)
    assert queue.order() == [0, 2, 5]
    assert len(queue) == 3
    assert 5 in queue and 1 not in queue
    with pytest.raises(ValueError, match="not in the free queue"):
        queue.remove(1)
    with pytest.raises(ValueError, match="already in the free queue"):
        queue.push_empty(5)
    assert [queue.pop() for _ in range(3)] == [0, 2, 5]
    with pytest.raises(IndexError):
        queue.pop()


def test_prefix_hash_chains_on_the_parent():
    root = hash_block(None, [1, 2])
    assert root == hash_block(None, [1, 2])
    assert root != hash_block(None, [2, 1])
    assert hash_block(root, [3, 4]) != hash_block(None, [3, 4])
    assert hash_block(root, [3, 4]) != hash_block(hash_block(None, [9, 9]), [3, 4])
