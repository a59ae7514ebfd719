"""mlcx's CPU paged attention with a sliding window against numpy: ragged rows of new tokens
over cached prefixes and decode rows, GQA, pages out of order. Pages wholly before every row's
window are filled with NaN, or their page-table entries are the KV manager's RELEASED
placeholder, so a kernel that read one would fail."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.cpu.kv_pages import kv_append_cpu
from mlcx.kernels.cpu.paged_attention import paged_attention_cpu
from mlcx.runtime.kv.sequence_blocks import RELEASED
from tests.support.paged_pages import random_tables
from tests.support.paged_pages import run_prim as _run

H_Q, H_KV, D, PAGE, PAGES, WINDOW = 4, 2, 16, 4, 32, 6
CASES = {
    "chunked-ragged": ([7, 23, 5], [3, 20, 5]),
    "decode": ([17, 1, 40], [1, 1, 1]),
}


def _reference(q, keys, values, lengths, new, softcap=0.0):
    out, row, group = np.zeros(q.shape), 0, H_Q // H_KV
    for k, v, n, m in zip(keys, values, lengths, new, strict=True):
        for i in range(m):
            limit = n - m + i + 1
            start = max(0, limit - WINDOW)
            for h in range(H_Q):
                s = k[start:limit, h // group] @ q[row, h] / np.sqrt(D)
                s = softcap * np.tanh(s / softcap) if softcap else s
                p = np.exp(s - s.max())
                out[row, h] = p @ v[start:limit, h // group] / p.sum()
            row += 1
    return out


@pytest.mark.parametrize(
    "placeholder, softcap", [("nan-pages", 0.0), ("released-ids", 0.0), ("nan-pages", 1.5)]
)
@pytest.mark.parametrize("case", CASES)
def test_windowed_attention_matches_numpy(case, placeholder, softcap):
    """With `softcap`, scores are also capped by softcap * tanh(score / softcap)."""
    lengths, new = CASES[case]
    rng = np.random.default_rng(3)
    tables, slots = random_tables(rng, lengths, PAGES, PAGE)
    keys = [rng.standard_normal((n, H_KV, D)).astype(np.float32) for n in lengths]
    values = [rng.standard_normal((n, H_KV, D)).astype(np.float32) for n in lengths]
    pages = np.zeros((PAGES, 2, H_KV, PAGE, D), np.float32)
    append = kv_append_cpu(H_KV, D, "float32", PAGE, "float32")
    pages = _run(append, pages, np.concatenate(keys), np.concatenate(values), slots.astype("i4"))[0]
    for table, n, m in zip(tables, lengths, new, strict=True):
        gone = max(0, n - m + 1 - WINDOW) // PAGE  # pages before the first row's window
        pages[table[:gone]] = np.nan
        if placeholder == "released-ids":
            table[:gone] = [RELEASED] * gone
    q = 3 * rng.standard_normal((sum(new), H_Q, D)).astype(np.float32)  # scores past the cap
    q_indptr = np.concatenate([[0], np.cumsum(new)]).astype("i4")
    page_indptr = np.concatenate([[0], np.cumsum([len(t) for t in tables])]).astype("i4")
    page_values = np.array([p for t in tables for p in t], "i4")
    last = np.array([n - (len(t) - 1) * PAGE for t, n in zip(tables, lengths, strict=True)], "i4")
    attend = paged_attention_cpu(H_KV, H_Q, D, "float32", PAGE, "float32", WINDOW, softcap)
    out = np.full_like(q, np.nan)
    got = _run(attend, q, q_indptr, pages, page_indptr, page_values, last, out)[-1]
    want = _reference(q, keys, values, lengths, new, softcap)
    np.testing.assert_allclose(got, want, atol=2e-5)
    if softcap:
        assert np.abs(want - _reference(q, keys, values, lengths, new)).max() > 0.1
