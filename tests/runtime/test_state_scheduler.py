"""The scheduler with a hybrid model's state cache, no model: pages of 4 tokens, a few state
slots; the test samples every token and checks the exact slots, copies, saves and counters."""

from __future__ import annotations

import pytest

from mlcx.errors import InvalidFieldError
from mlcx.runtime.core.scheduler import Scheduler
from mlcx.runtime.core.sequence import SequenceStatus
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.kv.prefix_hash import hash_block
from mlcx.runtime.state import StateCache

PAGE = 4
TOKEN = 100


def make(slots: int = 4, live: int = 2, blocks: int = 32, budget: int = 64, prefix=True):
    kv = KVCacheManager(blocks, PAGE, enable_prefix_caching=prefix)
    states = StateCache(kv, slots, live)
    return Scheduler(kv, live, budget, states=states), states


def step(sched: Scheduler, tokens: list[int] | None = None):
    out = sched.schedule()
    sampled = [TOKEN] * len(out.samples) if tokens is None else tokens
    return out, sched.update_from_output(out, sampled)


def batch(out) -> list[tuple[str, int]]:
    return [(item.seq.request_id, item.num_new) for item in out.scheduled]


def key(tokens: list[int]) -> int:
    """The prefix hash of the full blocks of `tokens` (the KV prefix cache's key)."""
    h = None
    for i in range(0, len(tokens) // PAGE * PAGE, PAGE):
        h = hash_block(h, tokens[i : i + PAGE])
    assert h is not None
    return h


def test_slots_follow_the_step_order_and_a_third_request_waits_for_one():
    sched, states = make(slots=3, live=2)
    for name in "abc":
        sched.add_request(name, [1, 2, 3], max_new_tokens=2)
    out, _ = step(sched)
    assert batch(out) == [("a", 3), ("b", 3)]  # no slot for c: it waits
    assert out.state.slots.tolist() == [0, 1] and out.state.copies == []
    # a and b decode their 4th token (a block boundary: a saves its state into slot 2; b's
    # is the same prefix) and end (max_new_tokens=2): their slots are freed
    out, _ = step(sched)
    assert out.state.slots.tolist() == [0, 1]
    assert (len(sched.running), states.stats().slots_in_use, states.pool.num_held) == (0, 0, 1)
    out, _ = step(sched)
    assert batch(out) == [("c", 3)]
    # c gets a's old slot 0: the save from it is copied out first
    assert out.state.slots.tolist() == [0] and out.state.copies == [[(0, 2)]]
    assert out.state.saves == [(2, key([1, 2, 3, TOKEN]))]


def test_the_prefill_is_cut_at_its_last_block_to_save_the_state_there():
    sched, states = make()
    prompt = list(range(1, 12))  # 11 tokens: the last block boundary before the end is 8
    sched.add_request("a", prompt, max_new_tokens=4)
    out, _ = step(sched)
    assert batch(out) == [("a", 8)] and out.samples == []
    out, _ = step(sched)  # the save (slot 0 -> 1) goes before this step
    assert batch(out) == [("a", 3)]
    assert out.state.copies == [[(0, 1)]] and out.state.saves == [(1, key(prompt[:8]))]
    assert states.pool.lookup(key(prompt[:8])) == 1  # findable once this step ran
    assert states.stats().checkpoints == 1


def test_decode_keeps_only_the_latest_boundary_beside_the_prompts():
    sched, states = make()
    seq = sched.add_request("a", list(range(1, 7)), max_new_tokens=12)
    while sched.has_work():
        step(sched)
    tokens = seq.token_ids  # 18 tokens, 17 computed: saves at 4 (the prompt's), 8, 12, 16
    saved = [p for p in (4, 8, 12, 16) if states.pool.lookup(key(tokens[:p])) is not None]
    assert saved == [4, 16]
    assert states.stats().slots_in_use == 0 and states.stats().checkpoints == 2


def test_a_prompt_resumes_from_the_longest_prefix_with_a_saved_state():
    sched, states = make()
    first = list(range(1, 19))  # 18 tokens: saved at 16
    sched.add_request("a", first, max_new_tokens=1)
    while sched.has_work():
        step(sched)
    # b shares 16 tokens with a: resumes at 16 from the checkpoint, restored into its slot
    sched.add_request("b", first[:16] + [90, 91, 92], max_new_tokens=1)
    out, _ = step(sched)
    assert batch(out) == [("b", 3)]
    ckpt = states.pool.lookup(key(first[:16]))
    assert out.state.copies == [[(ckpt, out.state.slots[0])]]
    # c shares 12 tokens with a: its pages are cached, its state is not (saved at 16 only)
    sched.add_request("c", first[:12] + [80, 81, 82, 83, 84], max_new_tokens=1)
    out, _ = step(sched)
    assert batch(out) == [("c", 16)] and out.state.copies == []
    stats = states.stats()
    assert (stats.checkpoint_hits, stats.hits_without_state, stats.tokens_without_state) == (
        1,
        1,
        12,
    )
    assert sched.stats.prefix_hit_tokens == 16


def test_checkpoints_are_evicted_least_recently_used_first():
    sched, states = make(slots=3, live=1)  # two checkpoint slots
    prompts = {name: [i * 10 + t for t in range(1, 7)] for i, name in enumerate("abc", 1)}
    for name, prompt in prompts.items():
        sched.add_request(name, prompt, max_new_tokens=1)
        while sched.has_work():
            step(sched)
    held = {name: states.pool.lookup(key(p[:4])) is not None for name, p in prompts.items()}
    assert held == {"a": False, "b": True, "c": True}
    assert states.stats().checkpoints == 2


def test_forks_take_reserved_slots_with_a_copy_of_the_parent_state():
    sched, states = make(slots=4, live=3)
    sched.add_request("p", [1, 2, 3], max_new_tokens=3, n=3)
    sched.add_request("q", [4, 5, 6], max_new_tokens=3)  # waits: p's forks hold the slots
    out, _ = step(sched, [7, 8, 9])
    assert batch(out) == [("p", 3)]
    out, _ = step(sched)
    assert out.state.copies == [[(0, 1), (0, 2)]]
    assert out.state.slots.tolist() == [0, 1, 2]
    with pytest.raises(InvalidFieldError, match="n=4 choices"):
        states.check_choices(4)


def test_preemption_and_abort_free_the_slot():
    sched, states = make(slots=3, live=2, blocks=4, prefix=False)
    a = sched.add_request("a", [1, 2, 3, 4, 5, 6, 7, 8], max_new_tokens=8)
    b = sched.add_request("b", [8, 9, 10, 11, 12, 13, 14], max_new_tokens=8)
    step(sched)
    assert states.stats().slots_in_use == 2
    out, _ = step(sched)  # a's third page is b's: b is preempted
    assert out.preempted == [b] and states.stats().slots_in_use == 1
    sched.abort_request("a")
    assert a.status is SequenceStatus.FINISHED_ABORTED
    assert states.stats().slots_in_use == 0 and states.pool.num_free == 3


def test_saves_of_a_step_that_never_ran_are_abandoned():
    sched, states = make()
    prompt = list(range(1, 12))
    sched.add_request("a", prompt, max_new_tokens=4)
    step(sched)
    sched.schedule()  # carries the save; the step fails and is never applied
    assert states.pool.num_held == 2
    sched.abort_request("a")
    out = sched.schedule()
    sched.update_from_output(out, [])  # an empty step publishes nothing of the failed one
    assert out.scheduled == [] and states.pool.num_held == 1  # the save's slot, until a step
    assert states.stats().checkpoints == 0
    sched.add_request("b", prompt, max_new_tokens=1)
    out = sched.schedule()  # the abandoned save's slot is back; nothing restores from it
    assert batch(out) == [("b", 8)] and out.state.copies == []
    assert states.pool.num_held == 1 and states.pool.lookup(key(prompt[:8])) is None


def test_a_turn_that_ends_at_a_boundary_is_resumed_through_its_pending_save():
    sched, states = make()
    first = sched.add_request("a", list(range(1, 8)), max_new_tokens=2)
    while sched.has_work():
        step(sched)
    # a computed 8 tokens and ended: its save at 8 has not been copied yet (no step since)
    assert states.pool.lookup(key(first.token_ids[:8])) is None
    sched.add_request("b", first.token_ids + [1, 2], max_new_tokens=1)
    out = sched.schedule()
    assert batch(out) == [("b", 3)] and out.state.slots.tolist() == [3]
    # the save (a's old slot 0 -> 2) comes first, then the restore from it into b's slot
    assert out.state.copies == [[(0, 2)], [(2, 3)]]
    sched.update_from_output(out, [TOKEN])
    assert states.pool.lookup(key(first.token_ids[:8])) == 2
    assert states.stats().checkpoint_hits == 1


def test_a_resume_never_evicts_the_checkpoint_it_restores():
    sched, states = make(slots=3, live=2)
    b = sched.add_request("b", [1, 2, 3, 4, 5, 6], max_new_tokens=4)
    while sched.has_work():
        step(sched)
    saved = [states.pool.lookup(key(b.token_ids[:p])) for p in (4, 8)]
    assert saved == [1, 2] and states.pool.free_order() == [0, 1, 2]
    sched.add_request("a", [40, 41, 42], max_new_tokens=10)
    step(sched)  # a holds slot 0: the checkpoints are the only free slots, 4's the oldest
    sched.add_request("c", [1, 2, 3, 4, 50, 51], max_new_tokens=1)
    out = sched.schedule()
    assert batch(out) == [("a", 1), ("c", 2)] and out.state.slots.tolist() == [0, 2]
    assert out.state.copies == [[(1, 2)]]  # the checkpoint at 8 went, the one at 4 stays
    assert states.pool.lookup(key(b.token_ids[:4])) == 1
    assert states.pool.lookup(key(b.token_ids[:8])) is None


def test_the_last_free_slot_is_taken_with_the_state_it_keeps():
    sched, states = make(slots=3, live=2)
    b = sched.add_request("b", [1, 2, 3, 4, 5, 6], max_new_tokens=1)
    while sched.has_work():
        step(sched)
    assert states.pool.lookup(key(b.token_ids[:4])) == 1
    sched.add_request("a", [40, 41, 42, 43, 44], max_new_tokens=4)
    out, _ = step(sched)  # a's prefill stops at 4 and saves its state there, into slot 0
    assert batch(out) == [("a", 4)] and out.state.slots.tolist() == [2]
    sched.add_request("c", [1, 2, 3, 4, 50, 51], max_new_tokens=1)
    out = sched.schedule()
    assert batch(out) == [("a", 1), ("c", 2)] and out.state.slots.tolist() == [2, 1]
    assert out.state.copies == [[(2, 0)]]  # c took the checkpoint's own slot: no copy
    assert states.pool.lookup(key(b.token_ids[:4])) is None  # it is c's live state now
    assert states.stats().checkpoint_hits == 1
