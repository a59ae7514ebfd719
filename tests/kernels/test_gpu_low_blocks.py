"""mlcx's GPU linear kernels (GEMV and tiled GEMM) and expert kernels on Q2_K, Q3_K, IQ4_NL
and IQ4_XS, run on this machine's wgpu adapter (lavapipe here) through the WebGPU plan's
lowering, against numpy on the weights `gguf`'s dequantization gives for the same blocks."""

from __future__ import annotations

import numpy as np
import pytest
from gguf.quants import dequantize

from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.experts import GpuExpertsSpec, build_gpu_experts
from mlcx.kernels.gpu.linear import GpuLinearSpec, build_gpu_linear
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.ggml_blocks import KIND_OF
from tests.kernels.test_gpu_experts import CFG, EXPERTS, SLOTS, _reference, _routing, _sorted
from tests.quantization.test_block_formats import random_blocks
from tests.support.wgpu_prim import run_prim_func

GGUF_TYPE = {kind: gtype for gtype, kind in KIND_OF.items()}
CASES = [  # kind, N, K, tokens (1-4: GEMV; more: GEMM), residual or swiglu input
    ("q2_k", 40, 512, 1, True),
    ("q2_k", 40, 256, 19, "swiglu"),
    ("q3_k", 72, 256, 2, "swiglu"),
    ("q3_k", 72, 512, 12, True),
    ("iq4_nl", 36, 576, 3, False),
    ("iq4_nl", 36, 96, 33, True),
    ("iq4_xs", 64, 256, 1, False),
    ("iq4_xs", 64, 512, 9, "swiglu"),
]


def _weights(kind: str, rows: int, k: int, seed: int):
    gtype = GGUF_TYPE[kind]
    raw = random_blocks(gtype, rows, k, seed=seed)
    params = unpack_blocks(raw, gtype, BlockFormat(kind), "w")
    return params, dequantize(raw, gtype).reshape(rows, k).astype(np.float64)


# with subgroup shuffles only: how lanes share activations does not depend on the weight
# format (both ways: tests/kernels/test_gpu_block_linear.py)
@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_linear_matches_gguf_weights(adapter, case):
    kind, n, k, tokens, extra = case
    rng = np.random.default_rng(n + k + tokens)
    fmt = BlockFormat(kind)
    params, weight = _weights(kind, n, k, tokens)
    swiglu, residual = extra == "swiglu", extra is True
    x = rng.standard_normal((tokens, 2 * k if swiglu else k)).astype(np.float32)
    res = rng.standard_normal((tokens, n)).astype(np.float32)
    poisoned = np.full((tokens, n), np.nan, np.float32)  # every element must be written
    func = build_gpu_linear(GpuLinearSpec(fmt, k, n, "float32", residual, swiglu), GpuConfig())
    arrays = [x, *(params[s] for s in fmt.suffixes), *([res] if residual else []), poisoned]
    out = run_prim_func(func, arrays)[-1]
    if swiglu:
        gate, up = x[:, :k].astype(np.float64), x[:, k:].astype(np.float64)
        x = gate / (1 + np.exp(-gate)) * up
    want = x.astype(np.float64) @ weight.T + (res if residual else 0)
    assert np.abs(out - want).max() <= 1e-5 * np.abs(want).max() * np.sqrt(k)


@pytest.mark.parametrize(
    "kind, layer, tokens", [("q3_k", "gate_up", 2), ("iq4_xs", "down_swiglu", 70)]
)
def test_experts_match_gguf_weights(adapter, kind, layer, tokens):
    rng = np.random.default_rng(tokens)
    k, n = 256, 32
    fmt = BlockFormat(kind)
    spec = GpuExpertsSpec(
        fmt, EXPERTS, SLOTS, k, n, "float32", per_slot=layer != "gate_up",
        fused=layer == "gate_up", swiglu=layer == "down_swiglu",
    )  # fmt: skip
    params, weight = _weights(kind, spec.weight_rows, k, tokens)
    ids = _routing(tokens, rng)
    shape = (tokens, SLOTS, spec.x_features) if spec.per_slot else (tokens, k)
    x = rng.standard_normal(shape).astype(np.float32)
    order, tile_expert = _sorted(ids, spec)
    out = np.full((tokens, SLOTS, n), np.nan, np.float32)
    planes = [params[s] for s in fmt.suffixes]
    got = run_prim_func(build_gpu_experts(spec, CFG), [x, ids, order, tile_expert, *planes, out])
    want = _reference(x, ids, weight, spec)
    assert np.abs(got[-1] - want).max() <= 1e-5 * np.abs(want).max() * np.sqrt(k)
