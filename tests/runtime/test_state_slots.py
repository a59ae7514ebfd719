"""The state slot pool on a handful of slots: exact slot ids, the free order, checkpoints kept
in free slots and evicted least recently used first; and the copy waves runners get."""

from __future__ import annotations

import pytest

from mlcx.runtime.state import OutOfSlots, SlotPool, copy_waves


def test_slots_go_out_in_id_order_and_come_back_at_the_end():
    pool = SlotPool(4)
    assert [pool.allocate() for _ in range(3)] == [0, 1, 2]
    assert (pool.num_held, pool.num_free, pool.free_order()) == (3, 1, [3])
    pool.free(1)
    pool.free(0)
    assert pool.free_order() == [3, 1, 0]
    assert [pool.allocate() for _ in range(3)] == [3, 1, 0]
    assert pool.num_free == 0
    with pytest.raises(OutOfSlots):
        pool.allocate()


def test_a_checkpoint_is_found_by_its_key_until_evicted_least_recently_used_first():
    pool = SlotPool(4)
    live = pool.allocate()
    saves = [pool.allocate() for _ in range(3)]
    assert (live, saves) == (0, [1, 2, 3])
    for slot, key in zip(saves, (0xA, 0xB, 0xC), strict=True):
        assert pool.publish(slot, key)
    assert [pool.lookup(k) for k in (0xA, 0xB, 0xC, 0xD)] == [1, 2, 3, None]
    assert (pool.num_checkpoints, pool.num_free, pool.key(2)) == (3, 3, 0xB)
    pool.touch(0xA)  # restored: now the most recently used
    assert pool.free_order() == [2, 3, 1]
    pool.free(live)  # an empty slot goes out before any checkpoint is evicted
    assert pool.free_order() == [0, 2, 3, 1]
    assert [pool.allocate(), pool.allocate()] == [0, 2]
    assert pool.lookup(0xB) is None and pool.key(2) is None
    assert pool.num_checkpoints == 2


def test_a_key_saved_twice_keeps_the_first_slot():
    pool = SlotPool(3)
    first, second = pool.allocate(), pool.allocate()
    assert pool.publish(first, 7)
    assert not pool.publish(second, 7)
    assert pool.lookup(7) == first and pool.key(second) is None
    assert pool.free_order() == [2, 1, 0]  # empty slots first, then the checkpoint


def test_a_dropped_checkpoint_frees_its_slot_before_the_others():
    pool = SlotPool(3)
    slots = [pool.allocate() for _ in range(3)]
    for slot, key in zip(slots, (10, 11, 12), strict=True):
        pool.publish(slot, key)
    pool.drop(12)
    assert pool.lookup(12) is None and pool.free_order() == [2, 0, 1]
    with pytest.raises(KeyError, match="no checkpoint"):
        pool.drop(12)


def test_misuse_is_refused():
    pool = SlotPool(2)
    with pytest.raises(ValueError, match="not held"):
        pool.free(0)
    with pytest.raises(ValueError, match="out of range 0..1"):
        pool.free(2)
    with pytest.raises(ValueError, match="at least 1"):
        SlotPool(0)
    with pytest.raises(KeyError):
        pool.touch(99)


def test_copy_waves_keep_dependent_copies_apart_in_order():
    # a save from slot 3, then a restore into slot 3 (reallocated), then independent forks
    pairs = [(3, 5), (6, 3), (0, 1), (0, 2), (2, 4), (4, 4)]
    assert copy_waves(pairs) == [[(3, 5)], [(6, 3), (0, 1), (0, 2)], [(2, 4)]]
    assert copy_waves([]) == []
    assert copy_waves([(1, 2), (1, 3), (2, 1)]) == [[(1, 2), (1, 3)], [(2, 1)]]
