"""mlcx's CPU paged attention with attention sinks (gpt-oss) against transformers' gpt-oss
eager attention: prefill with and without a cached prefix, decode and verify rows of batches of
different lengths, a sliding window of 128 over longer sequences, over f32, f16 and int8 pages
(whose rows here are exact in every dtype, so the tolerance is float32 rounding)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.kv_pages import kv_append_cpu
from mlcx.kernels.cpu.paged_attention import paged_attention_cpu
from tests.support.kernel_cache import cpu_module
from tests.support.paged_pages import random_tables
from tests.support.sink_attention import CASES, WINDOW, WINDOW_CASES, exact_rows, hf_attention

H_Q, H_KV, D, PAGE, PAGES = 4, 2, 16, 16, 48
ATOL = 1e-5
PAGE_ROWS = {"float32": D, "float16": D, "int8": D + 4}  # an int8 row ends in its scale's bytes
# what released pages may hold: NaN, or for int8 bytes 0xFF (codes -1, scales NaN)
GARBAGE = {"float32": np.nan, "float16": np.nan, "int8": -1}


@functools.cache
def _compiled(func_name: str, *args):
    func = {"append": kv_append_cpu, "attend": paged_attention_cpu}[func_name](*args)
    return cpu_module(func, tvm.target.Target({"kind": "llvm"}))["main"]


def _run(func, *arrays) -> list[np.ndarray]:
    tensors = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in arrays]
    func(*tensors)
    return [t.numpy() for t in tensors]


def _attend(dtype: str, lengths: list[int], new: list[int], window: int, sinks: np.ndarray):
    """(mlcx's output, transformers') for random queries over exact keys and values; pages
    wholly before every row's window hold NaN, so reading one would show."""
    rng = np.random.default_rng(sum(lengths) + window)
    tables, slots = random_tables(rng, lengths, PAGES, PAGE)
    keys = [exact_rows(rng, n, H_KV, D) for n in lengths]
    values = [exact_rows(rng, n, H_KV, D) for n in lengths]
    pages = np.zeros((PAGES, 2, H_KV, PAGE, PAGE_ROWS[dtype]), dtype)
    append = _compiled("append", H_KV, D, dtype, PAGE, "float32")
    pages = _run(append, pages, np.concatenate(keys), np.concatenate(values), slots.astype("i4"))
    pages = pages[0]
    if window:
        for table, n, m in zip(tables, lengths, new, strict=True):
            pages[table[: max(0, n - m + 1 - window) // PAGE]] = GARBAGE[dtype]
    q = rng.standard_normal((sum(new), H_Q, D)).astype(np.float32)
    q_indptr = np.concatenate([[0], np.cumsum(new)]).astype("i4")
    page_indptr = np.concatenate([[0], np.cumsum([len(t) for t in tables])]).astype("i4")
    page_values = np.array([p for t in tables for p in t], "i4")
    last = np.array([n - (len(t) - 1) * PAGE for t, n in zip(tables, lengths, strict=True)], "i4")
    attend = _compiled("attend", H_KV, H_Q, D, dtype, PAGE, "float32", window, 0.0, True)
    arrays = [q, q_indptr, pages, page_indptr, page_values, last, sinks, np.full_like(q, np.nan)]
    got = _run(attend, *arrays)[-1]
    return got, hf_attention(q, keys, values, sinks, new, window), (q, keys, values)


SINKS = np.array([2.5, -1.0, 0.5, 4.0], np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
@pytest.mark.parametrize("case", CASES)
def test_attention_with_sinks_matches_transformers(case, dtype):
    lengths, new = CASES[case]
    got, want, (q, keys, values) = _attend(dtype, lengths, new, 0, SINKS)
    np.testing.assert_allclose(got, want, atol=ATOL)
    without = hf_attention(q, keys, values, np.full(H_Q, -np.inf), new)
    assert np.abs(want - without).max() > 0.05  # the sinks matter at this tolerance


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
@pytest.mark.parametrize("case", WINDOW_CASES)
def test_sliding_window_attention_with_sinks_matches_transformers(case, dtype):
    lengths, new = WINDOW_CASES[case]
    got, want, _ = _attend(dtype, lengths, new, WINDOW, SINKS)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(got, want, atol=ATOL)


def test_the_kernel_names_its_sink_variant():
    """A model with windowed and full layers exports one symbol per variant."""
    names = {
        str(
            paged_attention_cpu(H_KV, H_Q, D, "float32", PAGE, "", w, 0.0, s).attrs["global_symbol"]
        )
        for w in (0, WINDOW)
        for s in (False, True)
    }
    assert len(names) == 4
