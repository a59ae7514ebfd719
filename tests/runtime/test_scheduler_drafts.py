"""The scheduler with drafted tokens, no model: exact batches, logit rows, KV rollback and
the token rules (stop token, max_tokens) inside kept drafts."""

from __future__ import annotations

from mlcx.runtime.core.scheduler import Scheduler
from mlcx.runtime.core.sequence import SequenceStatus
from mlcx.runtime.kv import KVCacheManager

PAGE = 4


def running(num_blocks=12, prompt=(1, 2, 3, 4, 5, 6), max_new=10, stop=()):
    sched = Scheduler(KVCacheManager(num_blocks, PAGE), 4, 32)
    seq = sched.add_request("a", list(prompt), max_new, stop_token_ids=stop)
    out = sched.schedule()
    sched.update_from_output(out, [50])  # prefill, first token 50
    return sched, seq


def test_a_drafted_decode_runs_its_last_token_and_the_draft_with_a_row_each():
    sched, seq = running()
    other = sched.add_request("b", [9, 9], 10)
    out = sched.schedule({seq.seq_id: [60, 61, 62]})
    assert [item.input_ids for item in out.scheduled] == [(50, 60, 61, 62), (9, 9)]
    assert out.logit_rows().tolist() == [0, 1, 2, 3, 5]
    assert out.samples == [(0, "a", 0), (4, "b", 0)] and out.drafts == [(60, 61, 62), ()]
    assert sched.kv.num_tokens(seq.seq_id) == 10
    sched.update_from_output(out, [[60, 61, 70], 80])  # two kept, then 70 of its own
    assert seq.output_ids == [50, 60, 61, 70] and seq.num_computed == 9
    assert sched.kv.num_tokens(seq.seq_id) == 9  # 6 prompt + 50, 60, 61; 62 rolled back
    assert other.output_ids == [80]
    assert sched.stats.computed_tokens == 6 + 4 + 2


def test_a_stop_token_or_max_tokens_inside_kept_drafts_ends_the_sequence_there():
    sched, seq = running(stop=(61,))
    out = sched.schedule({seq.seq_id: [60, 61, 62]})
    [returned] = sched.update_from_output(out, [[60, 61, 62, 63]])
    assert returned is seq and seq.output_ids == [50, 60, 61]
    assert seq.status is SequenceStatus.FINISHED_STOPPED and sched.kv.pool.num_used == 0
    sched, seq = running(max_new=3)
    assert sched.draftable() == [(seq, 1)]  # two more tokens at most: one draft and one own
    out = sched.schedule({seq.seq_id: [60]})
    sched.update_from_output(out, [[60, 61]])
    assert seq.output_ids == [50, 60, 61] and seq.status is SequenceStatus.FINISHED_LENGTH


def test_drafts_are_cut_to_the_budget_and_dropped_without_spare_blocks():
    sched, seq = running()
    sched.token_budget = 3
    out = sched.schedule({seq.seq_id: [60, 61, 62]})
    assert out.scheduled[0].draft == (60, 61)
    sched.update_from_output(out, [[60, 61, 62]])
    sched, seq = running(num_blocks=3)  # 2 blocks used, 1 free: a draft would take it
    out = sched.schedule({seq.seq_id: [60, 61, 62]})
    assert out.scheduled[0].draft == () and out.logit_rows() is None
