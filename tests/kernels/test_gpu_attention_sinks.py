"""mlcx's GPU paged attention with attention sinks (gpt-oss) against transformers' gpt-oss
eager attention, on this machine's wgpu adapter: one pass and split-K then merged (the sink
counted once), prefill with and without a cached prefix, decode and verify rows of batches of
different lengths, a sliding window of 128 over longer sequences, over f32, f16 and int8
pages (whose rows here are exact in every dtype, so the tolerance is float32 rounding)."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.gpu.attention import merge_attention_gpu, paged_attention_gpu
from mlcx.kernels.gpu.config import GpuConfig
from tests.support.paged_pages import random_tables
from tests.support.sink_attention import CASES, WINDOW, WINDOW_CASES, exact_rows, hf_attention
from tests.support.wgpu_prim import run_prim_func

H_Q, H_KV, D, PAGE, PAGES = 6, 2, 32, 16, 48
ATOL = 1e-5
SINKS = np.array([2.5, -1.0, 0.5, 4.0, 0.0, 1.5], np.float32)


def _pages(dtype: str, tables, keys, values, page_size: int = PAGE) -> np.ndarray:
    """The GPU's pages [PAGES, 2, H_KV, PAGE, row] holding each sequence's rows in order; an
    int8 row is uint32 words: its codes' bytes, then its scale (2**-7 for exact_rows)."""
    rows = np.zeros((PAGES, 2, H_KV, page_size, D), np.float32)
    for table, k, v in zip(tables, keys, values, strict=True):
        for j in range(len(k)):
            rows[table[j // page_size], :, :, j % page_size] = k[j], v[j]
    if dtype != "int8":
        return rows.astype(dtype)
    codes = np.rint(rows * 2**7).astype(np.int8)
    scales = np.full(rows.shape[:-1] + (4,), 2.0**-7, np.float32).view(np.int8)[..., :4]
    return np.ascontiguousarray(np.concatenate([codes, scales], axis=-1)).view(np.uint32)


def _attend(func, arrays: list[np.ndarray], splits: int) -> np.ndarray:
    tokens = arrays[0].shape[0]
    if splits == 1:
        return run_prim_func(func, [*arrays, np.full((tokens, H_Q, D), np.nan, np.float32)])[-1]
    outs = [np.full((splits, tokens, H_Q, w), np.nan, np.float32) for w in (D, 2)]
    *_, partial, stats = run_prim_func(func, [*arrays, *outs])
    out = np.full((tokens, H_Q, D), np.nan, np.float32)
    return run_prim_func(merge_attention_gpu(H_Q, D, "float32", splits), [partial, stats, out])[-1]


def _check(case: tuple, dtype: str, splits: int, window: int = 0) -> None:
    """mlcx's output equals transformers'; pages wholly before every row's window are zero
    for int8 (codes 0, scale 0) or NaN, so reading one would show."""
    lengths, new = case
    rng = np.random.default_rng(sum(lengths) + splits)
    tables, _ = random_tables(rng, lengths, PAGES, PAGE)
    keys = [exact_rows(rng, n, H_KV, D) for n in lengths]
    values = [exact_rows(rng, n, H_KV, D) for n in lengths]
    pages = _pages(dtype, tables, keys, values)
    if window:
        garbage = 0xFFFFFFFF if dtype == "int8" else np.nan  # int8: scale NaN
        for table, n, m in zip(tables, lengths, new, strict=True):
            pages[table[: max(0, n - m + 1 - window) // PAGE]] = garbage
    q = rng.standard_normal((sum(new), H_Q, D)).astype(np.float32)
    q_indptr = np.concatenate([[0], np.cumsum(new)]).astype("i4")
    page_indptr = np.concatenate([[0], np.cumsum([len(t) for t in tables])]).astype("i4")
    page_values = np.array([p for t in tables for p in t], "i4")
    last = np.array([n - (len(t) - 1) * PAGE for t, n in zip(tables, lengths, strict=True)], "i4")
    options = (GpuConfig(), splits, window, 0.0, dtype, True)
    func = paged_attention_gpu(H_Q, H_KV, D, PAGE, "float32", *options)
    got = _attend(func, [q, q_indptr, pages, page_indptr, page_values, last, SINKS], splits)
    want = hf_attention(q, keys, values, SINKS, new, window)
    np.testing.assert_allclose(got, want, atol=ATOL)
    without = hf_attention(q, keys, values, np.full(H_Q, -np.inf), new, window)
    assert np.abs(want - without).max() > 0.05  # the sinks matter at this tolerance


@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("case", [*CASES, *WINDOW_CASES])
def test_attention_with_sinks_matches_transformers(adapter, case, splits):
    window = WINDOW if case in WINDOW_CASES else 0
    _check({**CASES, **WINDOW_CASES}[case], "float32", splits, window)


# the page dtype only changes how rows are read: one pass and split-K, with and without a window
DTYPE_CASES = [("chunked-ragged", 1), ("decode", 3), ("prefill-past-window", 3)]


@pytest.mark.parametrize("dtype", ["float16", "int8"])
@pytest.mark.parametrize("case, splits", DTYPE_CASES)
def test_sinks_over_f16_and_int8_pages_match_transformers(adapter, case, splits, dtype):
    window = WINDOW if case in WINDOW_CASES else 0
    _check({**CASES, **WINDOW_CASES}[case], dtype, splits, window)
