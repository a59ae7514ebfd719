"""The GPU RoPE + KV append kernel against numpy, on this machine's wgpu adapter.

Reference: Llama's half-split RoPE with inverse frequencies theta ** (-2i / d); q comes back
rotated, k lands rotated and v unrotated at each token's slot, a slot of -1 writes nothing,
and every other page element keeps its value. With q/k norms (Qwen3) each q and k head is first
RMS-normalized with its own weights (v is not).
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.gpu.rope_append import rope_append_gpu
from mlcx.kernels.rope import RopeParams
from tests.support.wgpu_prim import run_prim_func

H_Q, H_KV, D, PAGE, PAGES, THETA, EPS = 3, 1, 32, 4, 5, 10000.0, 1e-6


def _rope(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """x [t, heads, d] rotated (float64)."""
    half = D // 2
    inv = THETA ** (-np.arange(half) * 2 / D)
    angle = positions[:, None].astype(np.float64) * inv[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def _rms(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * weight


@pytest.mark.parametrize("norm", [False, True], ids=["plain", "qk_norm"])
@pytest.mark.parametrize("tokens", [1, 6])
def test_rope_append_matches_numpy(adapter, tokens, norm):
    rng = np.random.default_rng(tokens)
    qkv = rng.standard_normal((tokens, (H_Q + 2 * H_KV) * D)).astype(np.float32)
    positions = rng.integers(0, 300, tokens).astype(np.int32)
    slots = rng.permutation(PAGES * PAGE)[:tokens].astype(np.int32)
    slots[0] = -1  # this token's KV is not stored
    pages = rng.standard_normal((PAGES, 2, H_KV, PAGE, D)).astype(np.float32)
    q = np.full((tokens, H_Q, D), np.nan, np.float32)
    weights = [rng.standard_normal(D).astype(np.float32) * 2 for _ in range(2)] if norm else []
    eps = EPS if norm else None
    func = rope_append_gpu(H_Q, H_KV, D, PAGE, "float32", RopeParams(THETA, {}, D), eps)
    outs = run_prim_func(func, [qkv, positions, pages, slots, *weights, q])
    got_pages, got_q = outs[2], outs[-1]

    heads = qkv.reshape(tokens, H_Q + 2 * H_KV, D).astype(np.float64)
    q_heads, k_heads = heads[:, :H_Q], heads[:, H_Q : H_Q + H_KV]
    if norm:
        q_heads, k_heads = _rms(q_heads, weights[0]), _rms(k_heads, weights[1])
    np.testing.assert_allclose(got_q, _rope(q_heads, positions), atol=1e-4)
    want = pages.copy()
    keys = _rope(k_heads, positions)
    for t, slot in enumerate(slots):
        if slot >= 0:
            want[slot // PAGE, 0, :, slot % PAGE] = keys[t]
            want[slot // PAGE, 1, :, slot % PAGE] = heads[t, H_Q + H_KV :]
    np.testing.assert_allclose(got_pages, want, atol=1e-4)


def test_partial_rotary_is_refused():
    with pytest.raises(ValueError, match="whole heads"):
        rope_append_gpu(H_Q, H_KV, D, PAGE, "float32", RopeParams(THETA, {}, D // 2))
