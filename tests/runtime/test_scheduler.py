"""The scheduler on a tiny KV cache (pages of 4 tokens), no model and no tokenizer: each step
is scheduled, the "model" samples the tokens the test picks, and the test checks the exact
batch, block ids, preemptions and frees."""

from __future__ import annotations

import pytest

from mlcx.runtime.core.scheduler import Scheduler, SchedulerOutput
from mlcx.runtime.core.sequence import SequenceStatus
from mlcx.runtime.kv import KVCacheManager
from tests.support.kv_state import refcounts

PAGE = 4
TOKEN = 100  # what the fake model samples unless a test picks


def make_scheduler(
    num_blocks: int = 12, max_batch: int = 4, token_budget: int = 32, prefix_caching=True
) -> Scheduler:
    kv = KVCacheManager(num_blocks, PAGE, enable_prefix_caching=prefix_caching)
    return Scheduler(kv, max_batch, token_budget)


def step(sched: Scheduler, tokens: list[int] | None = None):
    """Schedule, run (nothing to run), sample `tokens` (TOKEN for every sample by default)."""
    out = sched.schedule()
    sampled = [TOKEN] * len(out.samples) if tokens is None else tokens
    return out, sched.update_from_output(out, sampled)


def batch(out: SchedulerOutput) -> list[tuple[str, int]]:
    return [(item.seq.request_id, item.num_new) for item in out.scheduled]


def tables(sched: Scheduler) -> dict[str, tuple[int, ...]]:
    return {s.request_id: sched.kv.page_table(s.seq_id) for s in sched.running}


def test_prefill_takes_blocks_in_id_order_then_decodes_one_token():
    sched = make_scheduler()
    seq = sched.add_request("a", list(range(1, 11)), max_new_tokens=4)
    out, sampled = step(sched, [50])
    assert batch(out) == [("a", 10)]
    assert out.samples == [(0, "a", 0)]
    assert sampled == [seq] and seq.output_ids == [50]
    assert tables(sched) == {"a": (0, 1, 2)}
    assert (seq.num_computed, seq.status) == (10, SequenceStatus.RUNNING)
    assert sched.kv.pool.num_cached == 2  # the two full prompt blocks, once written

    out, _ = step(sched)
    assert batch(out) == [("a", 1)]
    assert out.scheduled[0].input_ids == (50,)
    assert tables(sched) == {"a": (0, 1, 2)}
    assert sched.kv.pool.num_free == 9


def test_chunked_prefill_splits_a_prompt_under_the_token_budget():
    sched = make_scheduler(token_budget=8)
    seq = sched.add_request("a", list(range(20)), max_new_tokens=4)
    chunks = []
    for _ in range(3):
        out, sampled = step(sched)
        chunks.append((batch(out), out.samples, sched.kv.page_table(seq.seq_id)))
    assert chunks == [
        ([("a", 8)], [], (0, 1)),
        ([("a", 8)], [], (0, 1, 2, 3)),
        ([("a", 4)], [(0, "a", 0)], (0, 1, 2, 3, 4)),
    ]
    assert sampled == [seq] and seq.output_ids == [TOKEN]
    assert out.scheduled[0].input_ids == tuple(range(16, 20))


def test_decodes_take_the_budget_before_a_running_prefill():
    sched = make_scheduler(token_budget=8)
    sched.add_request("p", [1, 2, 3], max_new_tokens=4, n=3)
    sched.add_request("x", list(range(10, 30)), max_new_tokens=4)
    out, _ = step(sched, [7, 8, 9])
    assert batch(out) == [("p", 3), ("x", 5)]
    # Running in order p, x, then p's forks; the three decodes still go first.
    assert [(s.request_id, s.index) for s in sched.running] == [
        ("p", 0),
        ("x", 0),
        ("p", 1),
        ("p", 2),
    ]
    out, _ = step(sched)
    assert [(i.seq.request_id, i.seq.index, i.num_new) for i in out.scheduled] == [
        ("p", 0, 1),
        ("p", 1, 1),
        ("p", 2, 1),
        ("x", 0, 5),
    ]


def test_preempts_the_youngest_and_admits_nothing_in_that_step():
    sched = make_scheduler(num_blocks=7)
    for name, first in [("a", 1), ("b", 11), ("c", 21)]:
        sched.add_request(name, list(range(first, first + 8)), max_new_tokens=10)
    out, _ = step(sched)
    assert batch(out) == [("a", 8), ("b", 8), ("c", 8)]
    assert tables(sched) == {"a": (0, 1), "b": (2, 3), "c": (4, 5)}
    assert sched.kv.pool.free_order() == [6]

    # Each 9th token needs a block: a takes the last free one; b's takes c's, the youngest.
    sched.add_request("d", [31, 32, 33], max_new_tokens=10)
    out, _ = step(sched)
    assert batch(out) == [("a", 1), ("b", 1)]
    assert [s.request_id for s in out.preempted] == ["c"]
    assert tables(sched) == {"a": (0, 1, 6), "b": (2, 3, 5)}
    # The victim waits first in line to be recomputed.
    assert [s.request_id for s in sched.waiting] == ["c", "d"]
    assert sched.kv.pool.free_order() == [4]
    c = sched.waiting[0]
    assert (c.status, c.num_computed, c.num_tokens) == (SequenceStatus.WAITING, 0, 9)
    assert sched.stats.preemptions == 1


def test_a_sequence_that_preempted_itself_waits_out_the_step():
    sched = make_scheduler(num_blocks=7, token_budget=10, prefix_caching=False)
    sched.add_request("a", [1, 2, 3, 4], max_new_tokens=10)
    sched.add_request("b", [5, 6, 7, 8], max_new_tokens=10)
    sched.add_request("c", list(range(20, 32)), max_new_tokens=10)
    plans = [batch(step(sched)[0]) for _ in range(3)]
    assert plans == [
        [("a", 4), ("b", 4), ("c", 2)],
        [("a", 1), ("b", 1), ("c", 8)],
        [("a", 1), ("b", 1), ("c", 2)],
    ]
    assert tables(sched) == {"a": (0, 3), "b": (1, 4), "c": (2, 5, 6)}

    # c's 13th token needs an 8th block: c, the youngest, is preempted. Its 3 freed blocks
    # would take an 8-token chunk of its recompute, but it waits for the next step.
    out, _ = step(sched)
    assert batch(out) == [("a", 1), ("b", 1)]
    assert [s.request_id for s in out.preempted] == ["c"]
    assert [s.request_id for s in sched.waiting] == ["c"]
    assert sched.kv.pool.free_order() == [6, 5, 2]
    out, _ = step(sched)
    assert batch(out) == [("a", 1), ("b", 1), ("c", 8)]
    assert tables(sched)["c"] == (6, 5)


def test_a_preempted_sequence_is_recomputed_with_its_cached_prefix():
    sched = make_scheduler(num_blocks=7)
    for name, first in [("a", 1), ("b", 11), ("c", 21)]:
        sched.add_request(name, list(range(first, first + 8)), max_new_tokens=10)
    step(sched)
    sched.add_request("d", [31, 32, 33], max_new_tokens=10)
    step(sched)  # preempts c; b reused c's tail block 5, c's first block 4 stays cached
    hits_before = sched.stats.prefix_hit_tokens
    sched.abort_request("a")  # frees 6 (empty), then 1 and 0 (cached)

    out, _ = step(sched)
    # c's 8 prompt tokens and its first output are recomputed, but block 4 is a hit.
    assert batch(out) == [("b", 1), ("c", 5), ("d", 3)]
    assert tables(sched) == {"b": (2, 3, 5), "c": (4, 6, 1), "d": (0,)}
    assert sched.stats.prefix_hit_tokens - hits_before == 4
    assert list(sched.waiting) == [] and sched.kv.pool.num_free == 0


def test_a_common_prompt_shares_written_blocks():
    sched = make_scheduler()
    sched.add_request("a", list(range(1, 11)), max_new_tokens=8)
    step(sched)
    sched.add_request("b", [*range(1, 9), 30, 31], max_new_tokens=8)
    out, _ = step(sched)
    assert batch(out) == [("a", 1), ("b", 2)]
    assert tables(sched) == {"a": (0, 1, 2), "b": (0, 1, 3)}
    assert refcounts(sched.kv)[:4] == [2, 2, 1, 1]
    assert (sched.stats.prefix_hit_tokens, sched.stats.prefix_query_tokens) == (8, 20)


def test_a_common_prompt_admitted_in_the_same_step_shares_nothing_yet():
    sched = make_scheduler()
    sched.add_request("a", list(range(1, 11)), max_new_tokens=8)
    sched.add_request("b", list(range(1, 11)), max_new_tokens=8)
    step(sched)
    assert tables(sched) == {"a": (0, 1, 2), "b": (3, 4, 5)}
    assert sched.stats.prefix_hit_tokens == 0


def test_n_choices_fork_at_the_first_sample_and_copy_the_shared_last_page():
    sched = make_scheduler()
    parent = sched.add_request("a", [1, 2, 3, 4, 5, 6], max_new_tokens=5, n=3)
    out, sampled = step(sched, [7, 8, 9])
    assert out.samples == [(0, "a", 0), (0, "a", 1), (0, "a", 2)]
    assert [(s.seq_id, s.index, s.output_ids) for s in sampled] == [
        (0, 0, [7]),
        (1, 1, [8]),
        (2, 2, [9]),
    ]
    assert sampled[0] is parent
    assert [sched.kv.page_table(s.seq_id) for s in sampled] == [(0, 1)] * 3
    assert refcounts(sched.kv)[:3] == [3, 3, 0]

    out, _ = step(sched)
    # The shared partial page 1 is copied on each choice's first write but the last one's.
    assert out.copies == [(1, 2), (1, 3)]
    assert [sched.kv.page_table(s.seq_id) for s in sampled] == [(0, 2), (0, 3), (0, 1)]
    assert refcounts(sched.kv)[:4] == [3, 1, 1, 1]
    assert [item.input_ids for item in out.scheduled] == [(7,), (8,), (9,)]


def test_abort_frees_every_block_of_running_waiting_and_forked_sequences():
    sched = make_scheduler(max_batch=1)
    sched.add_request("a", list(range(1, 7)), max_new_tokens=5, n=2)
    sched.add_request("b", list(range(10, 20)), max_new_tokens=5)
    sched.add_request("c", [1, 2], max_new_tokens=5)
    step(sched)
    assert sched.kv.pool.num_free == 12 - 2  # a's choices share its two prompt blocks
    assert [s.request_id for s in sched.waiting] == ["b", "c"]

    aborted = sched.abort_request("a")
    assert [(s.index, s.finish_reason) for s in aborted] == [(0, "abort"), (1, "abort")]
    assert [s.request_id for s in sched.abort_request("c")] == ["c"]
    assert sched.abort_request("c") == []
    assert sched.kv.pool.num_free == 12
    assert list(sched.requests) == ["b"] and sched.running == []


def test_a_stop_token_and_max_tokens_finish_and_free():
    sched = make_scheduler()
    a = sched.add_request("a", [1, 2, 3], max_new_tokens=2)
    b = sched.add_request("b", [4, 5, 6], max_new_tokens=9, stop_token_ids=[99])
    step(sched, [5, 99])
    assert b.status == SequenceStatus.FINISHED_STOPPED and b.finish_reason == "stop"
    assert sched.running == [a] and sched.kv.pool.num_free == 11
    out, _ = step(sched, [6])
    assert batch(out) == [("a", 1)]
    assert (a.status, a.output_ids) == (SequenceStatus.FINISHED_LENGTH, [5, 6])
    assert sched.kv.pool.num_free == 12
    assert sched.requests == {} and not sched.has_work()


def test_finish_ends_a_sequence_on_a_stop_string():
    sched = make_scheduler()
    a = sched.add_request("a", [1, 2, 3], max_new_tokens=9)
    step(sched)
    sched.finish(a, SequenceStatus.FINISHED_STOPPED)
    assert sched.kv.pool.num_free == 12 and sched.requests == {}
    with pytest.raises(ValueError, match="cannot move"):
        sched.finish(a, SequenceStatus.FINISHED_ABORTED)


def test_bad_input_is_a_value_error():
    sched = make_scheduler()
    sched.add_request("a", [1], max_new_tokens=1)
    with pytest.raises(ValueError, match="already in flight"):
        sched.add_request("a", [1], max_new_tokens=1)
    with pytest.raises(ValueError, match="empty"):
        sched.add_request("b", [], max_new_tokens=1)
    with pytest.raises(ValueError, match="must be positive"):
        sched.add_request("b", [1], max_new_tokens=1, n=0)
    out = sched.schedule()
    with pytest.raises(ValueError, match="2 sampled tokens for 1 samples"):
        sched.update_from_output(out, [1, 2])
    with pytest.raises(ValueError, match="must be positive"):
        make_scheduler(token_budget=0)
