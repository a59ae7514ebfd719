"""The GPU RoPE + KV append kernel against numpy, on this machine's wgpu adapter.

Reference: Llama's half-split RoPE with inverse frequencies theta ** (-2i / d); q comes back
rotated, k lands rotated and v unrotated at each token's slot, a slot of -1 writes nothing,
and every other page element keeps its value.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.gpu.rope_append import rope_append_gpu
from mlcx.kernels.rope import RopeParams

pytest.importorskip("wgpu", reason="pip install 'mlcx[web]' for the WebGPU runtime")
from tests.support.wgpu_prim import run_prim_func  # noqa: E402

H_Q, H_KV, D, PAGE, PAGES, THETA = 3, 1, 32, 4, 5, 10000.0


def _rope(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """x [t, heads, d] rotated (float64)."""
    half = D // 2
    inv = THETA ** (-np.arange(half) * 2 / D)
    angle = positions[:, None].astype(np.float64) * inv[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


@pytest.fixture(scope="module")
def adapter():
    wgpu = pytest.importorskip("wgpu")
    if not wgpu.gpu.enumerate_adapters_sync():
        pytest.skip("no wgpu adapter: run scripts/setup-system.sh (mesa-vulkan-drivers)")


@pytest.mark.parametrize("tokens", [1, 6])
def test_rope_append_matches_numpy(adapter, tokens):
    rng = np.random.default_rng(tokens)
    qkv = rng.standard_normal((tokens, (H_Q + 2 * H_KV) * D)).astype(np.float32)
    positions = rng.integers(0, 300, tokens).astype(np.int32)
    slots = rng.permutation(PAGES * PAGE)[:tokens].astype(np.int32)
    slots[0] = -1  # this token's KV is not stored
    pages = rng.standard_normal((PAGES, 2, H_KV, PAGE, D)).astype(np.float32)
    q = np.full((tokens, H_Q, D), np.nan, np.float32)
    func = rope_append_gpu(H_Q, H_KV, D, PAGE, "float32", RopeParams(THETA, {}, D))
    _, _, got_pages, _, got_q = run_prim_func(func, [qkv, positions, pages, slots, q])

    heads = qkv.reshape(tokens, H_Q + 2 * H_KV, D).astype(np.float64)
    np.testing.assert_allclose(got_q, _rope(heads[:, :H_Q], positions), atol=1e-4)
    want = pages.copy()
    keys = _rope(heads[:, H_Q : H_Q + H_KV], positions)
    for t, slot in enumerate(slots):
        if slot >= 0:
            want[slot // PAGE, 0, :, slot % PAGE] = keys[t]
            want[slot // PAGE, 1, :, slot % PAGE] = heads[t, H_Q + H_KV :]
    np.testing.assert_allclose(got_pages, want, atol=1e-4)


def test_partial_rotary_is_refused():
    with pytest.raises(ValueError, match="whole heads"):
        rope_append_gpu(H_Q, H_KV, D, PAGE, "float32", RopeParams(THETA, {}, D // 2))
