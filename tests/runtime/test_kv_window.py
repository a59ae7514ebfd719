"""KV cache manager with sliding-window attention: pages wholly before the window of the next
query are released (placeholders stay in the page table); forks and frees skip them."""

import pytest

from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.kv.sequence_blocks import RELEASED

PAGE = 4
WINDOW = 6  # the next query at position t sees keys t - 5 .. t


def _step(m: KVCacheManager, seq_id, tokens: list[int], n: int) -> int:
    if seq_id not in m:
        m.add_sequence(seq_id, tokens[:n])
    m.append(seq_id, n)
    m.build_arrays([(seq_id, n)])
    m.commit(seq_id, tokens)
    return m.release_outside_window(seq_id, WINDOW)


def test_pages_before_the_window_are_released_in_order():
    m = KVCacheManager(8, PAGE, enable_prefix_caching=False)
    tokens = list(range(100))
    # 9 tokens: the next query (position 9) needs keys 4.. -> page 0 goes
    assert _step(m, "a", tokens[:9], 9) == 1
    assert m.page_table("a") == (RELEASED, 1, 2)
    assert m.pool.num_free == 6
    # 12 tokens: keys 7.. are needed, page 1 holds 4..7 and stays
    assert _step(m, "a", tokens[:12], 3) == 0
    assert m.page_table("a") == (RELEASED, 1, 2)
    # 13 tokens: keys 8.. needed -> page 1 goes; the new page takes a
    # never-used block first (freed blocks join the back of the free queue)
    assert _step(m, "a", tokens[:13], 1) == 1
    assert m.page_table("a") == (RELEASED, RELEASED, 2, 3)
    arrays = m.build_arrays([("a", 1)])
    assert arrays.page_values.tolist() == [RELEASED, RELEASED, 2, 3]
    assert arrays.slots.tolist() == [3 * PAGE + 0]


def test_a_long_sequence_holds_a_bounded_number_of_pages():
    m = KVCacheManager(4, PAGE, enable_prefix_caching=True)
    tokens = list(range(200))
    _step(m, "a", tokens[:5], 5)
    for n in range(6, 200):
        _step(m, "a", tokens[:n], 1)
        held = [b for b in m.page_table("a") if b != RELEASED]
        assert len(held) <= -(-WINDOW // PAGE) + 1
        assert m.pool.num_used == len(held)
    assert len(m.page_table("a")) == 50  # one entry per page of the sequence


def test_fork_and_free_skip_released_pages():
    m = KVCacheManager(8, PAGE, enable_prefix_caching=False)
    tokens = list(range(20))
    _step(m, "a", tokens[:14], 14)
    m.fork("a", "b")
    assert m.page_table("b") == m.page_table("a") == (RELEASED, RELEASED, 2, 3)
    assert m.pool.refcount(2) == m.pool.refcount(3) == 2
    m.free("a")
    m.free("b")
    assert m.pool.num_free == 8


def test_window_must_be_positive():
    m = KVCacheManager(8, PAGE)
    m.add_sequence("a", [1, 2])
    with pytest.raises(ValueError, match="window"):
        m.release_outside_window("a", 0)


def test_the_scheduler_releases_pages_behind_every_layers_window():
    """A long generation in 3 blocks: without release it would need 5 and be preempted."""
    from mlcx.runtime.core.scheduler import Scheduler

    kv = KVCacheManager(3, PAGE, enable_prefix_caching=True)
    sched = Scheduler(kv, max_batch=1, token_budget=32, kv_window=WINDOW)
    seq = sched.add_request("a", list(range(10)), max_new_tokens=8)
    while sched.running or sched.waiting:
        out = sched.schedule()
        assert not out.preempted
        sched.update_from_output(out, [7] * len(out.samples))
        if seq.seq_id in kv:
            assert RELEASED in kv.page_table(seq.seq_id)
    assert seq.output_ids == [7] * 8 and kv.pool.num_used == 0
