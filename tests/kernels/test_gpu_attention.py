"""mlcx's GPU paged attention against numpy on this machine's wgpu adapter: ragged rows of new
tokens over cached prefixes (chunked prefill), decode rows, GQA, pages out of order."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.gpu.attention import UNITS, merge_attention_gpu, paged_attention_gpu
from mlcx.kernels.gpu.config import GpuConfig
from tests.support.wgpu_prim import run_prim_func, wgsl_sources

H_Q, H_KV, D, PAGE, PAGES = 6, 2, 32, 4, 24


def _tables(lengths: list[int], new: list[int], rng):
    """Page tables for sequences of `lengths` keys whose last `new` tokens are the queries."""
    order = rng.permutation(PAGES)
    indptr, values, last, used = [0], [], [], 0
    for n in lengths:
        count = -(-n // PAGE)
        values += order[used : used + count].tolist()
        used += count
        indptr.append(len(values))
        last.append(n - (count - 1) * PAGE)
    q_indptr = np.concatenate([[0], np.cumsum(new)]).astype(np.int32)
    return (
        q_indptr,
        np.array(indptr, np.int32),
        np.array(values, np.int32),
        np.array(last, np.int32),
    )


def _reference(q, pages, lengths, new, page_values, page_indptr, window=0, softcap=0.0):
    out, row = np.zeros_like(q, dtype=np.float64), 0
    group = H_Q // H_KV
    for b, (n, m) in enumerate(zip(lengths, new, strict=True)):
        ids = page_values[page_indptr[b] : page_indptr[b + 1]]
        k = pages[ids, 0].transpose(1, 0, 2, 3).reshape(H_KV, -1, D)[:, :n].astype(np.float64)
        v = pages[ids, 1].transpose(1, 0, 2, 3).reshape(H_KV, -1, D)[:, :n].astype(np.float64)
        for i in range(m):
            limit = n - m + i + 1
            start = max(0, limit - window) if window else 0
            for h in range(H_Q):
                s = k[h // group, start:limit] @ q[row, h] / np.sqrt(D)
                s = softcap * np.tanh(s / softcap) if softcap else s
                p = np.exp(s - s.max())
                out[row, h] = p @ v[h // group, start:limit] / p.sum()
            row += 1
    return out


CASES = {
    "prefill": ([9], [9]),
    "chunked-ragged": ([7, 23, 5], [3, 20, 5]),
    "decode": ([17, 1, 40], [1, 1, 1]),
    "more-rows-than-a-workgroup": ([UNITS + 9], [UNITS + 9]),
}


@pytest.mark.parametrize("subgroups", [True, False], ids=["shuffles", "no-shuffles"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_attention_matches_numpy(adapter, case, subgroups):
    lengths, new = CASES[case]
    rng = np.random.default_rng(len(case))
    q_indptr, page_indptr, page_values, last = _tables(lengths, new, rng)
    q = rng.standard_normal((sum(new), H_Q, D)).astype(np.float32)
    pages = rng.standard_normal((PAGES, 2, H_KV, PAGE, D)).astype(np.float32)
    out = np.full_like(q, np.nan)
    func = paged_attention_gpu(H_Q, H_KV, D, PAGE, "float32", GpuConfig(subgroups=subgroups))
    got = run_prim_func(func, [q, q_indptr, pages, page_indptr, page_values, last, out])[-1]
    want = _reference(q, pages, lengths, new, page_values, page_indptr)
    np.testing.assert_allclose(got, want, atol=2e-5)


@pytest.mark.parametrize("case", ["decode", "chunked-ragged"])
def test_split_k_then_merge_matches_numpy(adapter, case):
    lengths, new = CASES[case]
    splits = 5
    rng = np.random.default_rng(7)
    q_indptr, page_indptr, page_values, last = _tables(lengths, new, rng)
    tokens = sum(new)
    q = rng.standard_normal((tokens, H_Q, D)).astype(np.float32)
    pages = rng.standard_normal((PAGES, 2, H_KV, PAGE, D)).astype(np.float32)
    partial = np.full((splits, tokens, H_Q, D), np.nan, np.float32)
    stats = np.full((splits, tokens, H_Q, 2), np.nan, np.float32)
    split = paged_attention_gpu(H_Q, H_KV, D, PAGE, "float32", GpuConfig(), splits)
    arrays = [q, q_indptr, pages, page_indptr, page_values, last, partial, stats]
    *_, partial, stats = run_prim_func(split, arrays)
    out = np.full_like(q, np.nan)
    got = run_prim_func(merge_attention_gpu(H_Q, D, "float32", splits), [partial, stats, out])[-1]
    want = _reference(q, pages, lengths, new, page_values, page_indptr)
    np.testing.assert_allclose(got, want, atol=2e-5)


@pytest.mark.parametrize("splits", [1, 8])
def test_the_key_loop_has_no_short_circuit_branches(splits):
    """WGSL's && is a branch, and the codegen repeats a mask at every use: 66 of them in the
    default model's split kernel made SwiftShader's compiler run out of memory, and Chromium
    lost the WebGPU device in the demo."""
    func = paged_attention_gpu(9, 3, 64, 16, "float32", GpuConfig(), splits)
    for name, wgsl in wgsl_sources(func).items():
        assert "&&" not in wgsl, name


WINDOW = 6


@pytest.mark.parametrize("splits, softcap", [(1, 0.0), (3, 0.0), (1, 1.5), (3, 1.5)])
@pytest.mark.parametrize("case", ["chunked-ragged", "decode"])
def test_sliding_window_matches_numpy(adapter, case, splits, softcap):
    """Each row sees its last WINDOW keys; pages wholly before every row's window hold NaN (as
    released pages may hold anything), so reading one would show. With `softcap`, scores are
    also capped by softcap * tanh(score / softcap)."""
    lengths, new = CASES[case]
    rng = np.random.default_rng(11)
    q_indptr, page_indptr, page_values, last = _tables(lengths, new, rng)
    tokens = sum(new)
    q = rng.standard_normal((tokens, H_Q, D)).astype(np.float32)
    pages = rng.standard_normal((PAGES, 2, H_KV, PAGE, D)).astype(np.float32)
    for b, (n, m) in enumerate(zip(lengths, new, strict=True)):
        first_needed = max(0, n - m + 1 - WINDOW)
        pages[page_values[page_indptr[b] : page_indptr[b] + first_needed // PAGE]] = np.nan
    func = paged_attention_gpu(H_Q, H_KV, D, PAGE, "float32", GpuConfig(), splits, WINDOW, softcap)
    if splits == 1:
        got = run_prim_func(func, [q, q_indptr, pages, page_indptr, page_values, last, q * 0])
        got = got[-1]
    else:
        partial = np.zeros((splits, tokens, H_Q, D), np.float32)
        stats = np.zeros((splits, tokens, H_Q, 2), np.float32)
        arrays = [q, q_indptr, pages, page_indptr, page_values, last, partial, stats]
        *_, partial, stats = run_prim_func(func, arrays)
        merge = merge_attention_gpu(H_Q, D, "float32", splits)
        got = run_prim_func(merge, [partial, stats, q * 0])[-1]
    want = _reference(q, pages, lengths, new, page_values, page_indptr, WINDOW, softcap)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(got, want, atol=2e-5)
