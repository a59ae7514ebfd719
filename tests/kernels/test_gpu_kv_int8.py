"""An int8 KV cache on GPUs (`--kv-dtype int8`) against numpy, on this machine's wgpu adapter.

Reference: each key (after RoPE) and value row is quantized symmetrically, scale = max|x| / 127,
q = rint(x / scale), and stored as the row's int8 bytes then its float32 scale, seen by the GPU
kernels as uint32 words (mlcx.kernels.kv_layout). Attention over such pages must equal float
attention over scale * q (float32 rounding, not quantization, is the tolerance); the append
kernels must store numpy's codes (a code may differ by one where x / scale sits on a rounding
boundary, as GPU division is not exactly rounded) and numpy's scales.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.gpu.attention import merge_attention_gpu, paged_attention_gpu
from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.kv_append import kv_append_gpu
from mlcx.kernels.gpu.rope_append import rope_append_gpu
from mlcx.kernels.rope import RopeParams
from tests.kernels.test_gpu_attention import CASES, H_KV, H_Q, PAGE, PAGES, D, _tables
from tests.kernels.test_gpu_attention import _reference as float_attention
from tests.kernels.test_gpu_rope_append import EPS, PARTIAL, _default_table, _rms, _rope
from tests.support.wgpu_prim import run_prim_func

ATOL = 2e-5  # float32 accumulation order (the float kernel test's)


def _quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of x -> (int8 rows, float32 scales)."""
    top = np.abs(x).max(-1).astype(np.float32)
    inv = np.where(top > 0, np.float32(127) / np.where(top > 0, top, 1), 0).astype(np.float32)
    return np.rint(x * inv[..., None]).astype(np.int8), (top / np.float32(127)).astype(np.float32)


def _words(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Rows as the GPU holds them: the int8 bytes, then the scale's, as uint32 words."""
    row = np.concatenate([codes, scales[..., None].view(np.int8)], axis=-1)
    return np.ascontiguousarray(row).view(np.uint32)


def _unwords(words: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    raw = np.ascontiguousarray(words).view(np.int8)
    return raw[..., :d], raw[..., d:].copy().view(np.float32)[..., 0]


def _attend(func, arrays, splits: int):
    if splits == 1:
        return run_prim_func(func, arrays)[-1]
    *_, partial, stats = run_prim_func(func, arrays)
    tokens = arrays[0].shape[0]
    out = np.full((tokens, H_Q, D), np.nan, np.float32)
    return run_prim_func(merge_attention_gpu(H_Q, D, "float32", splits), [partial, stats, out])[-1]


@pytest.mark.parametrize(
    "case, splits",
    [("chunked-ragged", 1), ("decode", 1), ("decode", 5), ("chunked-ragged", 3)],
)
def test_attention_over_int8_pages_matches_numpy(adapter, case, splits):
    """GQA (3 q heads a kv head), pages out of order, partial last pages, a prefill chunk over a
    cached prefix and decode rows, in one pass and split-K then merged."""
    lengths, new = CASES[case]
    rng = np.random.default_rng(5)
    q_indptr, page_indptr, page_values, last = _tables(lengths, new, rng)
    tokens = sum(new)
    q = rng.standard_normal((tokens, H_Q, D)).astype(np.float32)
    codes, scales = _quantize(rng.standard_normal((PAGES, 2, H_KV, PAGE, D)).astype(np.float32) * 3)
    func = paged_attention_gpu(H_Q, H_KV, D, PAGE, "float32", GpuConfig(), splits, 0, 0.0, "int8")
    tables = [page_indptr, page_values, last]
    if splits == 1:
        outs = [np.full((tokens, H_Q, D), np.nan, np.float32)]
    else:
        outs = [np.zeros((splits, tokens, H_Q, width), np.float32) for width in (D, 2)]
    got = _attend(func, [q, q_indptr, _words(codes, scales), *tables, *outs], splits)
    dequantized = codes.astype(np.float64) * scales[..., None]
    want = float_attention(q, dequantized, lengths, new, page_values, page_indptr)
    np.testing.assert_allclose(got, want, atol=ATOL)


def _check_rows(pages: np.ndarray, before: np.ndarray, writes: dict, d: int) -> None:
    """`writes`: (page, kv, head, offset) -> the float row written there; other rows unchanged."""
    codes, scales = _unwords(pages, d)
    for index, row in writes.items():
        want_codes, want_scale = _quantize(row.astype(np.float32))
        np.testing.assert_allclose(scales[index], want_scale, rtol=1e-6)
        assert np.abs(codes[index].astype(int) - want_codes).max() <= 1, index
        pages[index], before[index] = 0, 0
    np.testing.assert_array_equal(pages, before)


def test_append_quantizes_each_row(adapter):
    rng = np.random.default_rng(3)
    tokens, h_kv = 5, 3
    k, v = (rng.standard_normal((tokens, h_kv, D)).astype(np.float32) * 2 for _ in range(2))
    k[1, 2] = 0  # an all-zero row: scale 0, codes 0
    slots = rng.permutation(PAGES * PAGE)[:tokens].astype(np.int32)
    slots[3] = -1
    pages = rng.integers(0, 2**32, (PAGES, 2, h_kv, PAGE, D // 4 + 1), dtype=np.uint32)
    func = kv_append_gpu(h_kv, D, PAGE, "int8", "float32")
    got = run_prim_func(func, [pages, k, v, slots])[0]
    writes = {
        (s // PAGE, kv, h, s % PAGE): (k, v)[kv][t, h]
        for t, s in enumerate(slots)
        if s >= 0
        for kv in (0, 1)
        for h in range(h_kv)
    }
    _check_rows(got.copy(), pages.copy(), writes, D)


@pytest.mark.parametrize(
    ("norm", "rotary"),
    [(False, D), (True, D), (False, PARTIAL)],
    ids=["plain", "qk_norm", "partial"],
)
def test_rope_append_quantizes_rotated_keys_and_values(adapter, norm, rotary):
    """Keys rotated (after their RMS norm with q/k norms, Qwen3; over the first `rotary`
    features with partial rotary), values as qkv holds them."""
    h_q, h_kv, tokens = 3, 1, 6
    rng = np.random.default_rng(9)
    qkv = rng.standard_normal((tokens, (h_q + 2 * h_kv) * D)).astype(np.float32)
    positions = rng.integers(0, 300, tokens).astype(np.int32)
    slots = rng.permutation(PAGES * PAGE)[:tokens].astype(np.int32)
    slots[0] = -1
    pages = rng.integers(0, 2**32, (PAGES, 2, h_kv, PAGE, D // 4 + 1), dtype=np.uint32)
    q = np.full((tokens, h_q, D), np.nan, np.float32)
    rope = RopeParams(10000.0, {}, rotary)
    weights = [rng.standard_normal(D).astype(np.float32) * 2 for _ in range(2)] if norm else []
    func = rope_append_gpu(h_q, h_kv, D, PAGE, "float32", rope, EPS if norm else None, "int8")
    outs = run_prim_func(func, [qkv, positions, pages, slots, *weights, q])
    heads = qkv.reshape(tokens, h_q + 2 * h_kv, D).astype(np.float64)
    q_heads, k_heads = heads[:, :h_q], heads[:, h_q : h_q + h_kv]
    if norm:
        q_heads, k_heads = _rms(q_heads, weights[0]), _rms(k_heads, weights[1])
    np.testing.assert_allclose(
        outs[-1], _rope(q_heads, positions, _default_table, rotary), atol=1e-4
    )
    keys = _rope(k_heads, positions, _default_table, rotary)
    codes, scales = _unwords(outs[2], D)
    for t, s in enumerate(slots[1:], start=1):
        for kv, rows in ((0, keys[t]), (1, heads[t, h_q + h_kv :])):
            page, off = s // PAGE, s % PAGE
            got = codes[page, kv, :, off] * scales[page, kv, :, off, None].astype(np.float64)
            step = np.abs(rows).max(-1, keepdims=True) / 127
            assert (np.abs(got - rows) <= 0.5 * step + 1e-4).all(), (t, kv)
    written = {(s // PAGE, kv, 0, s % PAGE) for s in slots[1:] for kv in (0, 1)}
    for index in np.ndindex(PAGES, 2, h_kv, PAGE):
        if index not in written:
            np.testing.assert_array_equal(outs[2][index], pages[index])


def test_append_to_float_pages_writes_the_rows(adapter):
    """The same kernel with float pages (no RoPE to fuse it with): each row at its slot,
    nothing else touched."""
    rng = np.random.default_rng(8)
    tokens, h_kv = 4, 3
    k, v = (rng.standard_normal((tokens, h_kv, D)).astype(np.float32) for _ in range(2))
    slots = np.array([5, -1, 17, 2], np.int32)
    pages = rng.standard_normal((PAGES, 2, h_kv, PAGE, D)).astype(np.float32)
    got = run_prim_func(kv_append_gpu(h_kv, D, PAGE, "float32", "float32"), [pages, k, v, slots])
    want = pages.copy()
    for t, s in enumerate(slots):
        if s >= 0:
            want[s // PAGE, 0, :, s % PAGE], want[s // PAGE, 1, :, s % PAGE] = k[t], v[t]
    np.testing.assert_array_equal(got[0], want)
