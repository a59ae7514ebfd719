"""RoPE over part of each head (Phi-4-mini's partial_rotary_factor) on CPU against numpy: the
plain RoPE kernel (mlcx.kernels.rope.rope_te, what every target runs where it cannot fuse) and
the fused CPU rope + KV append kernel.

Reference: the half-split rotation of transformers' Phi-3 over the first `rotary` features,
pairs (i, i + rotary / 2) turned by position * theta ** (-2i / rotary); the features past
`rotary` come back as they were. The GPU kernel's partial case is in test_gpu_rope_append.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from tvm import te

from mlcx.kernels.cpu.kv_pages import PageGeometry
from mlcx.kernels.cpu.rope_append import rope_append_cpu
from mlcx.kernels.rope import RopeParams, rope_te
from tests.support.paged_pages import run_prim

H_Q, H_KV, D, PAGE, PAGES, THETA = 4, 2, 16, 4, 6, 10000.0
ROTARY = 12  # 0.75 of the head


def _rope(x: np.ndarray, positions: np.ndarray, rotary: int) -> np.ndarray:
    half = rotary // 2
    angle = positions[:, None].astype(np.float64) * THETA ** (-np.arange(half) * 2 / rotary)
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    a, b, rest = x[..., :half], x[..., half:rotary], x[..., rotary:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin, rest], axis=-1)


def _inputs(tokens: int, heads: int):
    rng = np.random.default_rng(tokens)
    x = rng.standard_normal((tokens, heads, D)).astype(np.float32)
    return x, rng.integers(0, 500, tokens).astype(np.int32)


def test_plain_rope_turns_only_the_rotary_features():
    x, positions = _inputs(5, H_Q)
    xt = te.placeholder((5, H_Q, D), "float32", name="x")
    pt = te.placeholder((5,), "int32", name="positions")
    func = te.create_prim_func([xt, pt, rope_te(xt, pt, THETA, {}, ROTARY)])
    got = run_prim(func, x, positions, np.zeros_like(x))[-1]
    np.testing.assert_allclose(got, _rope(x.astype(np.float64), positions, ROTARY), atol=2e-5)
    np.testing.assert_array_equal(got[..., ROTARY:], x[..., ROTARY:])


@pytest.mark.parametrize("rotary", [-2, 5, D + 2])
def test_a_rotary_dimension_outside_the_head_is_refused(rotary):
    xt = te.placeholder((1, 1, D), "float32", name="x")
    pt = te.placeholder((1,), "int32", name="positions")
    with pytest.raises(ValueError, match="positive, even and at most head_dim"):
        rope_te(xt, pt, THETA, {}, rotary)


@pytest.mark.parametrize("tokens", [3, 11], ids=["serial", "parallel"])
def test_fused_cpu_rope_append_turns_only_the_rotary_features(tokens):
    """q comes back rotated over ROTARY features; k lands so (keys transposed in their slab:
    mlcx.kernels.cpu.kv_pages) and v as it was, at each token's slot."""
    rng = np.random.default_rng(tokens)
    qkv = rng.standard_normal((tokens, (H_Q + 2 * H_KV) * D)).astype(np.float32)
    positions = rng.integers(0, 500, tokens).astype(np.int32)
    slots = rng.permutation(PAGES * PAGE)[:tokens].astype(np.int32)
    geo = PageGeometry(H_KV, D, PAGE, "float32", "float32")
    func = rope_append_cpu(H_Q, geo, RopeParams(THETA, {}, ROTARY))
    pages = np.zeros((PAGES, 2, H_KV, PAGE, D), np.float32)
    q = np.zeros((tokens, H_Q, D), np.float32)
    _, _, pages, _, q = run_prim(func, qkv, positions, pages, slots, q)
    heads = qkv.reshape(tokens, -1, D).astype(np.float64)
    np.testing.assert_allclose(q, _rope(heads[:, :H_Q], positions, ROTARY), atol=2e-5)
    keys = _rope(heads[:, H_Q : H_Q + H_KV], positions, ROTARY)
    for t, slot in enumerate(slots):
        page, offset = divmod(int(slot), PAGE)
        for h in range(H_KV):
            stored_key = pages[page, 0, h].reshape(D, PAGE)[:, offset]
            np.testing.assert_allclose(stored_key, keys[t, h], atol=2e-5)
            np.testing.assert_array_equal(pages[page, 1, h, offset], heads[t, H_Q + H_KV + h])
