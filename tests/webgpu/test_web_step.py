"""web/src/step.js and kv_cache.js against the Python definitions of a forward step: which
function runs (decode or prefill), its inputs by name and order, the page-table arrays, and
the KV pages' shape; for a hybrid model also each sequence's state slot among the arrays and
the state tensors' shapes (web/src/state_cache.js). The JS reads the plan; the plan here is
built from mlcx.kernels."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mlcx.artifact.state_tensors import parse_state_tensors
from mlcx.kernels.hybrid.params import SLOTS
from mlcx.kernels.kv_layout import NUM_PAGES, KVLayout
from mlcx.kernels.step_params import (
    DECODE,
    KV_PAGES,
    PAGE_TABLES,
    PREFILL,
    STATES,
    entry_inputs,
)
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.kv import SequenceStep, build_page_table_arrays

SCRIPT = Path(__file__).resolve().parents[2] / "web" / "test" / "step.test.mjs"
# int8 pages on GPU are uint32 words (3 a row here): step.js takes any layout from the plan
LAYOUT = KVLayout(4, 2, 8, 4, "float32", "int8", "gpu")
NUM_LAYERS = 2
# (feeds {seq: new tokens}, explicit logit rows or None, the function that runs), in order
# on one cache
STEPS = [
    ({0: [5, 6, 7, 8, 9], 1: [1, 2]}, None, PREFILL),  # ragged, each sequence's last row
    ({0: [10], 1: [11]}, None, DECODE),  # one token each
    ({0: [12]}, [0], PREFILL),  # one token, but rows named
    ({0: [13], 1: [14, 15]}, None, PREFILL),  # mixed
    ({1: [16, 17, 18]}, [0, 2], PREFILL),  # a chunk with chosen rows
]


# a hybrid model's state tensors (a Gated DeltaNet layer's conv and recurrent state, a short
# convolution's window) and each sequence's slot in the steps above
STATE_TENSORS = parse_state_tensors(
    [
        {"layer": 0, "name": "conv", "shape": [24, 3], "dtype": "float16"},
        {"layer": 0, "name": "recurrent", "shape": [2, 4, 4], "dtype": "float32"},
        {"layer": 2, "name": "conv", "shape": [8, 2], "dtype": "float16"},
    ]
)
STATE_SLOTS = {0: 3, 1: 0}
NUM_STATE_SLOTS = 5


def _plan(states: bool = False) -> dict:
    """The part of a WebGPU plan step.js reads: each step function's inputs, in order."""
    pages = {"shape": list(LAYOUT.pages_shape(NUM_PAGES)), "dtype": LAYOUT.element}
    held = [{"shape": [SLOTS, *t.shape], "dtype": t.dtype} for t in STATE_TENSORS]
    functions = {}
    for name in (PREFILL, DECODE):
        inputs = [{"name": n, "fields": []} for n in entry_inputs(name, states)]
        next(i for i in inputs if i["name"] == KV_PAGES)["fields"] = [pages] * NUM_LAYERS
        if states:
            next(i for i in inputs if i["name"] == STATES)["fields"] = held
        functions[name] = {"name": name, "inputs": inputs}
    return {"functions": functions}


def _run_js(states: bool) -> dict:
    if shutil.which("node") is None:
        pytest.skip("Node.js is missing: run scripts/setup-web.sh")
    steps = [
        {"feeds": list(feeds.items()), "rows": rows}
        | ({"stateSlots": [STATE_SLOTS[s] for s in feeds]} if states else {})
        for feeds, rows, _ in STEPS
    ]
    case = {"plan": _plan(states), "pageSize": LAYOUT.page_size, "numBlocks": 16, "steps": steps}
    if states:
        case["numStateSlots"] = NUM_STATE_SLOTS
    out = subprocess.run(
        ["node", str(SCRIPT), json.dumps(case)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def js():
    return _run_js(states=False)


@pytest.fixture(scope="module")
def js_hybrid():
    return _run_js(states=True)


def _batch(feeds: dict, rows, got: dict, states: bool = False) -> ForwardBatch:
    """The Python step for the pages the JS cache manager chose."""
    news = [len(t) for t in feeds.values()]
    seqs = zip(got["pages"], got["numTokens"], news, strict=True)
    tables = build_page_table_arrays([SequenceStep(*s) for s in seqs], LAYOUT.page_size)
    ids = np.array([t for tokens in feeds.values() for t in tokens], np.int32)
    slots = np.array([STATE_SLOTS[s] for s in feeds], np.int32) if states else None
    logit_rows = None if rows is None else np.array(rows, np.int32)
    return ForwardBatch(ids, tables, logit_rows=logit_rows, state_slots=slots)


@pytest.mark.parametrize("index", range(len(STEPS)))
def test_page_tables_match(js, index):
    feeds, rows, _ = STEPS[index]
    got = js["steps"][index]
    want = _batch(feeds, rows, got).tables
    assert set(got["tables"]) == set(PAGE_TABLES)
    for name in PAGE_TABLES:
        assert got["tables"][name] == getattr(want, name).tolist(), name


@pytest.mark.parametrize("index", range(len(STEPS)))
def test_function_and_inputs_match(js, index):
    feeds, rows, function = STEPS[index]
    got = js["steps"][index]
    batch = _batch(feeds, rows, got)
    want = batch.step_inputs()
    assert got["name"] == batch.function == function
    assert got["names"] == list(want)
    assert got["arrays"] == {k: v.tolist() for k, v in want.items()}


def test_kv_pages_match_the_layout(js):
    want = {"shape": list(LAYOUT.pages_shape(16)), "dtype": LAYOUT.element}
    assert js["kvPages"] == [want] * NUM_LAYERS


@pytest.mark.parametrize("index", range(len(STEPS)))
def test_a_hybrid_step_names_each_sequence_s_state_slot(js_hybrid, index):
    feeds, rows, function = STEPS[index]
    got = js_hybrid["steps"][index]
    batch = _batch(feeds, rows, got, states=True)
    want = batch.step_inputs()
    assert got["name"] == batch.function == function
    assert got["names"] == list(want)
    assert got["arrays"] == {k: v.tolist() for k, v in want.items()}


def test_the_state_tensors_match_the_artifact_s(js_hybrid):
    want = [
        {"shape": list(t.slots_shape(NUM_STATE_SLOTS)), "dtype": t.dtype} for t in STATE_TENSORS
    ]
    assert js_hybrid["states"] == want
