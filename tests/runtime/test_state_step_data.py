"""What a hybrid model's step hands the runner: `state_slots` right after the page tables (the
state-cache contract), the plan's input order a WebGPU runner checks, and CUDA-graph decode
padding whose extra rows run in a scratch state slot."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels import step_params as base
from mlcx.kernels.step_params import (
    DECODE,
    PAGE_TABLES,
    PREFILL,
    STATE_SLOTS,
    entry_inputs,
    step_params,
)
from mlcx.runtime.backends.decode_graph import padded_decode_inputs
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.kv import KVCacheManager

TABLES = list(PAGE_TABLES)


def test_state_slots_come_right_after_the_page_tables():
    assert step_params(PREFILL, states=True) == (
        "input_ids",
        *TABLES,
        "state_slots",
        "logit_positions",
    )
    assert step_params(DECODE, states=True) == ("input_ids", *TABLES, "state_slots")
    assert entry_inputs(PREFILL, states=True) == (
        *step_params(PREFILL, states=True),
        "kv_pages",
        "states",
        "packed_params",
    )
    # models without state: unchanged
    assert step_params(DECODE) == base.step_params(DECODE) == ("input_ids", *TABLES)
    assert entry_inputs(DECODE) == base.entry_inputs(DECODE)


def _decode_batch(lengths: dict[int, int], slots: list[int] | None) -> ForwardBatch:
    kv = KVCacheManager(16, 4, False)
    for seq, n in lengths.items():
        kv.add_sequence(seq, list(range(n)))
        kv.append(seq, n)
        kv.commit(seq, list(range(n)))
        kv.append(seq, 1)
    tables = kv.build_arrays([(seq, 1) for seq in lengths])
    ids = np.arange(len(lengths), dtype=np.int32) + 5
    state_slots = None if slots is None else np.array(slots, dtype=np.int32)
    return ForwardBatch(ids, tables, state_slots=state_slots)


def test_a_step_passes_its_state_slots_in_the_sequences_order():
    batch = _decode_batch({1: 5, 2: 2, 3: 8}, [6, 0, 3])
    inputs = batch.step_inputs()
    assert list(inputs) == list(step_params(DECODE, states=True))
    assert inputs[STATE_SLOTS].tolist() == [6, 0, 3]
    assert STATE_SLOTS not in _decode_batch({1: 5}, None).step_inputs()
    with pytest.raises(ValueError, match="2 state slots for 3 sequences"):
        _decode_batch({1: 5, 2: 2, 3: 8}, [6, 0])


def test_cuda_graph_padding_rows_run_in_the_scratch_slot():
    batch = _decode_batch({1: 5, 2: 2, 3: 8}, [6, 0, 3])
    out = padded_decode_inputs(batch, bucket=4, capacity=12, scratch_page=16, scratch_slot=9)
    assert list(out) == list(step_params(DECODE, states=True))
    assert out[STATE_SLOTS].tolist() == [6, 0, 3, 9]
    assert out["positions"].tolist()[-1] == 0  # the scratch slot's state starts from zero
    assert all(a.dtype == np.int32 for a in out.values())
