"""The LoRA step inputs compose with a hybrid model's state inputs: each token's adapter slot
and scale come last among the step arrays, the stacked adapter weights after the KV pages and
the states; CUDA-graph decode padding runs its extra rows with no adapter."""

from __future__ import annotations

import numpy as np

from mlcx.kernels.step_params import (
    DECODE,
    KV_PAGES,
    LORA_ROWS,
    LORA_SCALES,
    LORA_WEIGHTS,
    PAGE_TABLES,
    PARAMS,
    PREFILL,
    STATE_SLOTS,
    STATES,
    TOKENS,
    entry_inputs,
    step_params,
)
from mlcx.runtime.backends.decode_graph import padded_decode_inputs
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.kv import KVCacheManager

TABLES = tuple(PAGE_TABLES)


def test_lora_inputs_come_after_the_state_inputs():
    assert step_params(DECODE, states=True, lora=True) == (
        TOKENS,
        *TABLES,
        STATE_SLOTS,
        LORA_ROWS,
        LORA_SCALES,
    )
    assert step_params(PREFILL, lora=True)[-3:] == ("logit_positions", LORA_ROWS, LORA_SCALES)
    assert entry_inputs(PREFILL, states=True, lora=True) == (
        *step_params(PREFILL, states=True, lora=True),
        KV_PAGES,
        STATES,
        LORA_WEIGHTS,
        PARAMS,
    )
    assert entry_inputs(DECODE, lora=True)[-3:] == (KV_PAGES, LORA_WEIGHTS, PARAMS)


def _decode_batch(lengths: dict[int, int]) -> ForwardBatch:
    kv = KVCacheManager(16, 4, False)
    for seq, n in lengths.items():
        kv.add_sequence(seq, list(range(n)))
        kv.append(seq, n)
        kv.commit(seq, list(range(n)))
        kv.append(seq, 1)
    tables = kv.build_arrays([(seq, 1) for seq in lengths])
    return ForwardBatch(
        np.arange(len(lengths), dtype=np.int32) + 5,
        tables,
        lora_rows=np.array([2, 0, 1], np.int32),
        lora_scales=np.array([1.0, 0.0, 0.5], np.float32),
        state_slots=np.array([6, 0, 3], np.int32),
    )


def test_a_step_with_states_and_adapters_passes_both():
    inputs = _decode_batch({1: 5, 2: 2, 3: 8}).step_inputs()
    assert tuple(inputs) == step_params(DECODE, states=True, lora=True)
    assert inputs[STATE_SLOTS].tolist() == [6, 0, 3]
    assert inputs[LORA_ROWS].tolist() == [2, 0, 1]
    assert inputs[LORA_SCALES].tolist() == [1.0, 0.0, 0.5]


def test_cuda_graph_padding_rows_run_no_adapter():
    batch = _decode_batch({1: 5, 2: 2, 3: 8})
    out = padded_decode_inputs(batch, bucket=4, capacity=12, scratch_page=16, scratch_slot=9)
    assert tuple(out) == step_params(DECODE, states=True, lora=True)
    assert out[LORA_ROWS].tolist() == [2, 0, 1, 0]
    assert out[LORA_SCALES].tolist() == [1.0, 0.0, 0.5, 0.0]
    assert out[STATE_SLOTS].tolist() == [6, 0, 3, 9]
    assert out[LORA_SCALES].dtype == np.float32
    assert all(a.dtype == np.int32 for name, a in out.items() if name != LORA_SCALES)
