"""KV cache manager: block ids, refcounts, prefix sharing, forks, release, page-table arrays."""

import numpy as np
import pytest

from mlcx.runtime.kv import KVCacheManager, OutOfBlocks
from tests.support.kv_state import refcounts, snapshot

PAGE = 4


def manager(num_blocks: int = 8, prefix_caching: bool = True) -> KVCacheManager:
    return KVCacheManager(num_blocks, PAGE, enable_prefix_caching=prefix_caching)


def prefill(m: KVCacheManager, seq_id, prompt: list[int]) -> int:
    """add + append + one forward step + commit; returns the cached prompt tokens."""
    cached = m.add_sequence(seq_id, prompt)
    m.append(seq_id, len(prompt) - cached)
    m.build_arrays([(seq_id, len(prompt) - cached)])
    m.commit(seq_id, prompt)
    return cached


def decode(m: KVCacheManager, seq_id, token_ids: list[int]) -> list[tuple[int, int]]:
    """One decode step of the sequence whose tokens are now `token_ids`."""
    copies = m.append(seq_id, 1)
    m.build_arrays([(seq_id, 1)])
    m.commit(seq_id, token_ids)
    return copies


def test_prefill_allocates_blocks_in_id_order():
    m = manager()
    assert m.add_sequence("a", list(range(1, 10))) == 0
    assert m.append("a", 9) == []
    assert m.page_table("a") == (0, 1, 2)
    assert m.num_tokens("a") == 9
    assert m.pool.num_free == 5
    assert m.usage() == 3 / 8
    m.build_arrays([("a", 9)])
    assert m.pool.num_cached == 0
    m.commit("a", list(range(1, 10)))
    assert m.pool.num_cached == 2


def test_second_sequence_reuses_committed_full_prefix_blocks():
    m = manager()
    prefill(m, "a", list(range(1, 11)))
    assert m.page_table("a") == (0, 1, 2)

    prompt = [*range(1, 9), 20, 21, 22]
    assert m.add_sequence("b", prompt) == 8
    assert m.page_table("b") == (0, 1)
    assert m.num_tokens("b") == 8
    assert refcounts(m)[:4] == [2, 2, 1, 0]
    assert m.append("b", 3) == []
    assert m.page_table("b") == (0, 1, 3)


def test_blocks_are_shareable_only_after_commit():
    m = manager()
    m.add_sequence("a", list(range(1, 11)))
    m.append("a", 10)
    assert m.add_sequence("b", list(range(1, 11))) == 0
    m.build_arrays([("a", 10)])
    m.commit("a", list(range(1, 11)))
    assert m.match_prefix(list(range(1, 11))) == 8
    assert m.add_sequence("c", list(range(1, 11))) == 8


def test_at_least_one_prompt_token_is_left_uncached():
    m = manager()
    prefill(m, "a", list(range(1, 9)))
    assert m.pool.num_cached == 2
    # Both blocks of the 8-token prompt are cached, yet only the first is reused.
    assert m.add_sequence("b", list(range(1, 9))) == 4
    assert m.page_table("b") == (0,)
    assert m.add_sequence("c", list(range(1, 10))) == 8
    assert m.add_sequence("d", [1, 2, 3, 4]) == 0


def test_prefix_caching_disabled_never_hits():
    m = manager(prefix_caching=False)
    prefill(m, "a", list(range(1, 11)))
    assert m.pool.num_cached == 0
    assert m.add_sequence("b", list(range(1, 11))) == 0


def test_fork_shares_blocks_and_copies_partial_block_on_first_write():
    m = manager()
    prefill(m, "a", [1, 2, 3, 4, 5, 6])
    m.fork("a", "b")
    assert m.page_table("b") == (0, 1)
    assert m.num_tokens("b") == 6
    assert refcounts(m)[:3] == [2, 2, 0]
    assert m.blocks_needed("b", 1) == 1

    assert m.append("b", 1) == [(1, 2)]
    assert m.page_table("b") == (0, 2)
    assert refcounts(m)[:3] == [2, 1, 1]
    # The parent now owns block 1 alone and writes into it directly.
    assert m.append("a", 1) == []
    assert m.page_table("a") == (0, 1)
    arrays = m.build_arrays([("a", 1), ("b", 1)])
    assert arrays.slots.tolist() == [1 * PAGE + 2, 2 * PAGE + 2]


def test_copy_on_write_together_with_new_blocks():
    m = manager()
    prefill(m, "a", [1, 2, 3, 4, 5, 6])
    m.fork("a", "b")
    assert m.blocks_needed("b", 3) == 2
    assert m.append("b", 3) == [(1, 2)]
    assert m.page_table("b") == (0, 2, 3)


def test_fork_of_full_last_block_needs_no_copy():
    m = manager()
    prefill(m, "a", list(range(1, 9)))
    m.fork("a", "b")
    assert m.append("b", 1) == []
    assert m.page_table("b") == (0, 1, 2)
    assert refcounts(m)[:3] == [2, 2, 1]


def test_fork_rejects_existing_child():
    m = manager()
    prefill(m, "a", [1, 2, 3])
    m.fork("a", "b")
    with pytest.raises(ValueError, match="already registered"):
        m.fork("a", "b")
    assert refcounts(m)[:2] == [2, 0]


def test_commit_needs_a_token_id_per_slot():
    m = manager()
    m.add_sequence("a", list(range(1, 10)))
    m.append("a", 9)
    with pytest.raises(ValueError, match="9 slot"):
        m.commit("a", list(range(1, 9)))
    assert m.pool.num_cached == 0
    m.commit("a", list(range(1, 10)))
    assert m.pool.num_cached == 2


def test_out_of_blocks_reports_counts_and_changes_nothing():
    m = manager()
    prefill(m, "a", list(range(20)))
    m.add_sequence("b", list(range(100, 113)))
    before = snapshot(m, ["a", "b"])
    assert not m.can_append("b", 13)
    with pytest.raises(OutOfBlocks) as info:
        m.append("b", 13)
    assert (info.value.needed, info.value.available) == (4, 3)
    assert snapshot(m, ["a", "b"]) == before
    assert m.can_append("b", 12)


def test_out_of_blocks_on_copy_on_write_changes_nothing():
    m = manager(num_blocks=4)
    prefill(m, "a", [1, 2, 3, 4, 5, 6])
    m.fork("a", "b")
    prefill(m, "c", list(range(10, 18)))
    assert m.pool.num_free == 0
    before = snapshot(m, ["a", "b", "c"])
    with pytest.raises(OutOfBlocks) as info:
        m.append("b", 1)
    assert (info.value.needed, info.value.available) == (1, 0)
    assert snapshot(m, ["a", "b", "c"]) == before


def test_finished_sequence_returns_blocks_and_keeps_its_prefix_evictable():
    m = manager()
    prefill(m, "a", [1, 2, 3, 4, 5, 6])
    decode(m, "a", [1, 2, 3, 4, 5, 6, 7])
    m.free("a")
    assert "a" not in m and len(m) == 0
    # Block 1 (partial, uncached) is reusable at once; block 0 keeps its cached prefix.
    assert m.pool.free_order() == [2, 3, 4, 5, 6, 7, 1, 0]
    assert (m.pool.num_free, m.pool.num_cached, m.usage()) == (8, 1, 0.0)
    assert m.match_prefix([1, 2, 3, 4, 5]) == 4


def test_aborted_sequence_returns_uncommitted_blocks_uncached():
    m = manager()
    m.add_sequence("a", list(range(9)))
    m.append("a", 9)
    m.free("a")
    assert m.pool.free_order() == [3, 4, 5, 6, 7, 2, 1, 0]
    assert (m.pool.num_free, m.pool.num_cached) == (8, 0)


def test_free_of_unknown_or_already_freed_sequence_raises():
    m = manager()
    prefill(m, "a", [1, 2])
    m.free("a")
    with pytest.raises(KeyError, match="already freed"):
        m.free("a")
    with pytest.raises(KeyError, match="unknown sequence"):
        m.append("a", 1)
    assert m.pool.num_free == 8


def test_cached_prefixes_are_evicted_least_recently_used_first():
    m = manager(num_blocks=4)
    prefill(m, "a", [1, 2, 3, 4, 5])
    m.free("a")
    prefill(m, "b", [11, 12, 13, 14, 15])
    assert m.page_table("b") == (2, 3)
    m.free("b")
    assert m.pool.free_order() == [1, 3, 0, 2]

    prefill(m, "c", list(range(21, 30)))
    assert m.page_table("c") == (1, 3, 0)
    assert m.match_prefix([1, 2, 3, 4, 5]) == 0
    assert m.match_prefix([11, 12, 13, 14, 15]) == 4


def test_build_arrays_for_ragged_prefill_and_decode_batch():
    m = manager()
    prefill(m, "a", [1, 2, 3, 4, 5, 6])
    assert m.append("a", 1) == []
    assert m.add_sequence("b", [1, 2, 3, 4, 11, 12, 13, 14, 15, 16]) == 4
    m.append("b", 6)
    assert m.page_table("b") == (0, 2, 3)

    arrays = m.build_arrays([("b", 6), ("a", 1)])
    assert arrays.q_indptr.tolist() == [0, 6, 7]
    assert arrays.positions.tolist() == [4, 5, 6, 7, 8, 9, 6]
    assert arrays.slots.tolist() == [8, 9, 10, 11, 12, 13, 6]
    assert arrays.page_indptr.tolist() == [0, 3, 5]
    assert arrays.page_values.tolist() == [0, 2, 3, 0, 1]
    assert arrays.last_page_len.tolist() == [2, 3]
    assert arrays.logit_positions.tolist() == [5, 6]
    assert arrays.kv_lens.tolist() == [10, 7]
    assert (arrays.batch_size, arrays.num_new_tokens, arrays.page_size) == (2, 7, PAGE)
    for name in ["q_indptr", "positions", "slots", "page_indptr", "page_values"]:
        assert getattr(arrays, name).dtype == np.int32
    assert arrays.last_page_len.dtype == arrays.logit_positions.dtype == np.int32

    m.commit("b", [1, 2, 3, 4, 11, 12, 13, 14, 15, 16])
    m.commit("a", [1, 2, 3, 4, 5, 6, 7])
    assert m.match_prefix([1, 2, 3, 4, 11, 12, 13, 14, 99]) == 8


def test_build_arrays_with_a_row_per_token_writes_the_same_slots_causally():
    """A verify step as decode rows: each new token its own row over its own prefix."""
    m = manager()
    prefill(m, "a", [1, 2, 3, 4, 5, 6])
    m.append("a", 1)
    prefill(m, "b", [7, 8, 9])
    m.append("b", 3)  # the last accepted token and two drafts
    batch = [("a", 1), ("b", 3)]
    plain, rows = m.build_arrays(batch), m.build_arrays(batch, row_per_token=True)
    assert rows.q_indptr.tolist() == [0, 1, 2, 3, 4]
    assert rows.positions.tolist() == plain.positions.tolist() == [6, 3, 4, 5]
    assert rows.slots.tolist() == plain.slots.tolist()
    assert rows.kv_lens.tolist() == [7, 4, 5, 6]
    b_pages = list(m.page_table("b"))
    assert rows.page_values.tolist() == list(m.page_table("a")) + b_pages[:1] + b_pages * 2
    assert (rows.batch_size, rows.num_new_tokens) == (4, 4)


def test_build_arrays_rejects_inconsistent_batches():
    m = manager()
    prefill(m, "a", [1, 2, 3])
    m.append("a", 1)
    with pytest.raises(ValueError, match=r"num_new must be in 1..num_tokens \(4\)"):
        m.build_arrays([("a", 5)])
    with pytest.raises(ValueError, match="num_new must be"):
        m.build_arrays([("a", 0)])
    with pytest.raises(ValueError, match="more than once"):
        m.build_arrays([("a", 1), ("a", 1)])
    with pytest.raises(ValueError, match="at least one sequence"):
        m.build_arrays([])
    with pytest.raises(KeyError):
        m.build_arrays([("zz", 1)])


def test_argument_validation():
    with pytest.raises(ValueError, match="page_size"):
        KVCacheManager(8, 0)
    with pytest.raises(ValueError, match="int32"):
        KVCacheManager(2**20, 2**12)
    m = manager()
    with pytest.raises(ValueError, match="at least one token"):
        m.add_sequence("a", [])
    m.add_sequence("a", [1])
    with pytest.raises(ValueError, match="already registered"):
        m.add_sequence("a", [1])
    with pytest.raises(ValueError, match="non-negative"):
        m.blocks_needed("a", -1)
    assert m.append("a", 0) == []
    with pytest.raises(ValueError, match="non-negative"):
        m.append("a", -1)
