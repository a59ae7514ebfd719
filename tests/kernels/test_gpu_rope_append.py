"""The GPU RoPE + KV append kernel against numpy, on this machine's wgpu adapter.

Reference: Llama's half-split RoPE with inverse frequencies theta ** (-2i / d), or YaRN's
frequencies and cos/sin scale as transformers computes them; q comes back rotated, k lands
rotated and v unrotated at each token's slot, a slot of -1 writes nothing, and every other page
element keeps its value. With partial rotary (Phi-4-mini) only the first rotary features of each
head turn and the rest come back as they were. With q/k norms (Qwen3) each q and k head is first
RMS-normalized with its own weights (v is not)."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.frontends.hf_config import HFConfigReader
from mlcx.kernels.gpu.rope_append import rope_append_gpu
from mlcx.kernels.rope import RopeParams
from tests.support.wgpu_prim import run_prim_func

H_Q, H_KV, D, PAGE, PAGES, THETA, EPS = 3, 1, 32, 4, 5, 10000.0, 1e-6
PARTIAL = 24  # rotary features of a D-feature head (partial_rotary_factor 0.75)


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}


def _default_table(rotary: int = D) -> tuple[np.ndarray, float]:
    return THETA ** (-np.arange(rotary // 2) * 2 / rotary), 1.0


def _yarn_table(rotary: int = D) -> tuple[np.ndarray, float]:
    """transformers' YaRN frequencies and scale for the first `rotary` of D head features."""
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_theta": THETA, "partial_rotary_factor": rotary / D, **YARN}
    config = LlamaConfig(hidden_size=D * 4, num_attention_heads=4, rope_parameters=params)
    inv, scale = ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
    return inv.double().numpy(), scale


SCALINGS = {"default": ({}, _default_table), "yarn": (YARN, _yarn_table)}


def _scaling(name: str) -> dict:
    """The scaling as mlcx's HF config reader gives it to the kernels."""
    config = {
        "rope_theta": THETA,
        "max_position_embeddings": 256,
        "rope_scaling": SCALINGS[name][0],
    }
    return HFConfigReader(config, "llama").rope()[1]


def _rope(
    x: np.ndarray, positions: np.ndarray, table=_default_table, rotary: int = D
) -> np.ndarray:
    """x [t, heads, d] with its first `rotary` features rotated (float64), the rest kept."""
    half = rotary // 2
    inv, scale = table(rotary)
    angle = positions[:, None].astype(np.float64) * inv[None, :]
    cos, sin = scale * np.cos(angle)[:, None, :], scale * np.sin(angle)[:, None, :]
    a, b, rest = x[..., :half], x[..., half:rotary], x[..., rotary:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin, rest], axis=-1)


def _rms(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * weight


@pytest.mark.parametrize(
    ("norm", "scaling", "rotary"),
    [
        (False, "default", D),
        (True, "default", D),
        (False, "yarn", D),
        (False, "yarn", PARTIAL),
        (True, "default", PARTIAL),
    ],
)
@pytest.mark.parametrize("tokens", [1, 6])
def test_rope_append_matches_numpy(adapter, tokens, norm, scaling, rotary):
    rng = np.random.default_rng(tokens)
    qkv = rng.standard_normal((tokens, (H_Q + 2 * H_KV) * D)).astype(np.float32)
    positions = rng.integers(0, 300, tokens).astype(np.int32)
    slots = rng.permutation(PAGES * PAGE)[:tokens].astype(np.int32)
    slots[0] = -1  # this token's KV is not stored
    pages = rng.standard_normal((PAGES, 2, H_KV, PAGE, D)).astype(np.float32)
    q = np.full((tokens, H_Q, D), np.nan, np.float32)
    weights = [rng.standard_normal(D).astype(np.float32) * 2 for _ in range(2)] if norm else []
    eps = EPS if norm else None
    rope = RopeParams(THETA, _scaling(scaling), rotary)
    func = rope_append_gpu(H_Q, H_KV, D, PAGE, "float32", rope, eps)
    table = SCALINGS[scaling][1]
    outs = run_prim_func(func, [qkv, positions, pages, slots, *weights, q])
    got_pages, got_q = outs[2], outs[-1]

    heads = qkv.reshape(tokens, H_Q + 2 * H_KV, D).astype(np.float64)
    q_heads, k_heads = heads[:, :H_Q], heads[:, H_Q : H_Q + H_KV]
    if norm:
        q_heads, k_heads = _rms(q_heads, weights[0]), _rms(k_heads, weights[1])
    np.testing.assert_allclose(got_q, _rope(q_heads, positions, table, rotary), atol=1e-4)
    want = pages.copy()
    keys = _rope(k_heads, positions, table, rotary)
    for t, slot in enumerate(slots):
        if slot >= 0:
            want[slot // PAGE, 0, :, slot % PAGE] = keys[t]
            want[slot // PAGE, 1, :, slot % PAGE] = heads[t, H_Q + H_KV :]
    np.testing.assert_allclose(got_pages, want, atol=1e-4)


@pytest.mark.parametrize("rotary", [0, 7, D + 2])
def test_a_rotary_dimension_that_is_not_even_pairs_of_the_head_is_refused(rotary):
    with pytest.raises(ValueError, match="positive, even and at most head_dim"):
        rope_append_gpu(H_Q, H_KV, D, PAGE, "float32", RopeParams(THETA, {}, rotary))
