"""web/src/step.js and kv_cache.js against the Python definitions of a forward step: which
function runs (decode or prefill), its inputs by name and order, the page-table arrays, and
the KV pages' shape. The JS reads the plan; the plan here is built from mlcx.kernels."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mlcx.kernels.kv_layout import NUM_PAGES, KVLayout
from mlcx.kernels.step_params import DECODE, KV_PAGES, PAGE_TABLES, PREFILL, entry_inputs
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


def _plan() -> dict:
    """The part of a WebGPU plan step.js reads: each step function's inputs, in order."""
    pages = {"shape": list(LAYOUT.pages_shape(NUM_PAGES)), "dtype": LAYOUT.element}
    functions = {}
    for name in (PREFILL, DECODE):
        inputs = [{"name": n, "fields": []} for n in entry_inputs(name)]
        next(i for i in inputs if i["name"] == KV_PAGES)["fields"] = [pages] * NUM_LAYERS
        functions[name] = {"name": name, "inputs": inputs}
    return {"functions": functions}


@pytest.fixture(scope="module")
def js():
    if shutil.which("node") is None:
        pytest.skip("Node.js is missing: run scripts/setup-web.sh")
    steps = [{"feeds": list(feeds.items()), "rows": rows} for feeds, rows, _ in STEPS]
    case = {"plan": _plan(), "pageSize": LAYOUT.page_size, "numBlocks": 16, "steps": steps}
    out = subprocess.run(
        ["node", str(SCRIPT), json.dumps(case)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _batch(feeds: dict, rows, got: dict) -> ForwardBatch:
    """The Python step for the pages the JS cache manager chose."""
    news = [len(t) for t in feeds.values()]
    seqs = zip(got["pages"], got["numTokens"], news, strict=True)
    tables = build_page_table_arrays([SequenceStep(*s) for s in seqs], LAYOUT.page_size)
    ids = np.array([t for tokens in feeds.values() for t in tokens], np.int32)
    return ForwardBatch(ids, tables, logit_rows=None if rows is None else np.array(rows, np.int32))


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
