"""An int8 KV cache on CPU (`--kv-dtype int8`) against numpy with the same quantization.

Reference: each stored key row (after RoPE) and value row of one kv head is quantized
symmetrically, scale = max|x| / 127, q = rint(x / scale); the CPU layout keeps keys transposed
inside a page and the page_size float32 scales after the features of each slab
(mlcx.kernels.cpu.kv_pages). The attention kernels must then equal float attention over
scale * q: both compute in float32, so the tolerance is float32 rounding, not quantization.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.cpu.attention import copy_pages
from mlcx.kernels.cpu.kv_pages import PageGeometry
from mlcx.kernels.cpu.paged_attention import paged_attention_cpu
from mlcx.kernels.cpu.rope_append import rope_append_cpu
from mlcx.kernels.rope import RopeParams
from tests.support.paged_pages import random_tables
from tests.support.paged_pages import run_prim as _run

H_Q, H_KV, D, PAGE, PAGES, THETA = 4, 2, 16, 4, 24, 10000.0
ATOL = 2e-5  # float32 accumulation order (the f32 kernel test's)


def _rope(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """x [t, heads, d] with Llama's half-split RoPE (float64)."""
    half = D // 2
    angle = positions[:, None].astype(np.float64) * THETA ** (-np.arange(half) * 2 / D)
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def _quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of x -> (int8 rows, float32 scales)."""
    top = np.abs(x).max(-1)
    inv = np.where(top > 0, 127 / np.where(top > 0, top, 1), 0)
    return np.rint(x * inv[..., None]).astype(np.int8), (top / 127).astype(np.float32)


def _unpack(pages: np.ndarray, page: int, kind: int, head: int):
    """(int8 [page_size, d], scales [page_size]) of one slab (keys untransposed)."""
    slab = pages[page, kind, head].reshape(-1)
    features, scales = slab[: PAGE * D], slab[PAGE * D :].view(np.float32)
    rows = features.reshape(D, PAGE).T if kind == 0 else features.reshape(PAGE, D)
    return rows, scales


def _dequantized(pages: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """keys, values [len(slots), h_kv, d] as the kernels read them (scale * q)."""
    out = np.zeros((2, len(slots), H_KV, D))
    for i, slot in enumerate(slots):
        for kind in (0, 1):
            for h in range(H_KV):
                rows, scales = _unpack(pages, slot // PAGE, kind, h)
                out[kind, i, h] = rows[slot % PAGE] * scales[slot % PAGE]
    return out[0], out[1]


def _filled(rng, lengths: list[int]):
    """Pages holding len(lengths) sequences written by rope_append: (pages, tables, kv, qkv)."""
    tables, slots = random_tables(rng, lengths, PAGES, PAGE)
    positions = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
    qkv = rng.standard_normal((len(slots), (H_Q + 2 * H_KV) * D)).astype(np.float32)
    qkv[0, (H_Q + H_KV) * D : (H_Q + H_KV + 1) * D] = 0  # an all-zero value row: scale 0
    geo = PageGeometry(H_KV, D, PAGE, "int8", "float32")
    pages = np.zeros((PAGES, 2, H_KV, PAGE, D + 4), np.int8)
    q = np.zeros((len(slots), H_Q, D), np.float32)
    func = rope_append_cpu(H_Q, geo, RopeParams(THETA, {}, D))
    pages = _run(func, qkv, positions, pages, slots.astype("i4"), q)[2]
    return pages, tables, slots, (qkv.reshape(len(slots), -1, D).astype(np.float64), positions)


def test_rope_append_quantizes_rotated_keys_and_values_per_row():
    pages, _, slots, (heads, positions) = _filled(np.random.default_rng(0), [9, 6])
    want_k = _rope(heads[:, H_Q : H_Q + H_KV], positions)
    want_v = heads[:, H_Q + H_KV :]
    for want, kind in ((want_k, 0), (want_v, 1)):
        want_q, want_scale = _quantize(want)
        for i, slot in enumerate(slots):
            for h in range(H_KV):
                rows, scales = _unpack(pages, slot // PAGE, kind, h)
                # float32 vs float64 rotation may flip a rounding tie: at most one step
                assert np.abs(rows[slot % PAGE].astype(int) - want_q[i, h]).max() <= 1
                np.testing.assert_allclose(scales[slot % PAGE], want_scale[i, h], rtol=1e-5)
    assert _unpack(pages, slots[0] // PAGE, 1, 0)[1][slots[0] % PAGE] == 0


def _attention(q, keys, values, lengths, new, window):
    out, row, group, start = np.zeros(q.shape), 0, H_Q // H_KV, 0
    for n, m in zip(lengths, new, strict=True):
        k, v = keys[start : start + n], values[start : start + n]
        for i in range(m):
            limit = n - m + i + 1
            first = max(0, limit - window) if window else 0
            for h in range(H_Q):
                s = k[first:limit, h // group] @ q[row, h] / np.sqrt(D)
                p = np.exp(s - s.max())
                out[row, h] = p @ v[first:limit, h // group] / p.sum()
            row += 1
        start += n
    return out


@pytest.mark.parametrize(
    "lengths, new",
    [([7, 23, 5], [3, 20, 5]), ([17, 1, 40], [1, 1, 1]), ([27, 21, 30], [5, 3, 1])],
    ids=["prefill", "decode", "verify"],  # verify: a few rows each, read with the decode pages
)
@pytest.mark.parametrize("window", [0, 6], ids=["causal", "window6"])
def test_attention_over_int8_pages_matches_numpy(lengths, new, window):
    rng = np.random.default_rng(1)
    pages, tables, slots, _ = _filled(rng, lengths)
    keys, values = _dequantized(pages, slots)
    q = rng.standard_normal((sum(new), H_Q, D)).astype(np.float32)
    q_indptr = np.concatenate([[0], np.cumsum(new)]).astype("i4")
    page_indptr = np.concatenate([[0], np.cumsum([len(t) for t in tables])]).astype("i4")
    page_values = np.array([p for t in tables for p in t], "i4")
    last = np.array([n - (len(t) - 1) * PAGE for t, n in zip(tables, lengths, strict=True)], "i4")
    attend = paged_attention_cpu(H_KV, H_Q, D, "int8", PAGE, "float32", window)
    out = np.full_like(q, np.nan)
    got = _run(attend, q, q_indptr, pages, page_indptr, page_values, last, out)[-1]
    np.testing.assert_allclose(got, _attention(q, keys, values, lengths, new, window), atol=ATOL)


def test_copy_on_write_moves_the_scales_with_the_rows():
    pages = np.random.default_rng(2).integers(-128, 128, (PAGES, 2, H_KV, PAGE, D + 4), np.int8)
    pairs = np.array([[3, 7], [10, 0]], "i4")
    got = _run(copy_pages(H_KV, D, "int8", PAGE), pages, pairs)[0]
    want = pages.copy()
    want[[7, 0]] = pages[[3, 10]]
    np.testing.assert_array_equal(got, want)
