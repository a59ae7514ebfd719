"""mlcx's GPU linear kernels (GEMV and tiled GEMM) on the 5-bit and K-quant formats, run on
this machine's wgpu adapter (lavapipe here) through the WebGPU plan's lowering (uint8 / int8
scales and f16 super-block scales read through 32-bit words), against numpy on the weights
`gguf`'s dequantization gives for the same blocks."""

from __future__ import annotations

import numpy as np
import pytest
from gguf.quants import dequantize

from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.linear import GpuLinearSpec, build_gpu_linear
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.ggml_blocks import KIND_OF
from tests.quantization.test_block_formats import random_blocks
from tests.support.wgpu_prim import run_prim_func

GGUF_TYPE = {kind: gtype for gtype, kind in KIND_OF.items()}
CASES = [
    ("q4_k", 72, 512, 1, True),
    ("q4_k", 72, 512, 19, False),
    ("q5_k", 40, 256, 2, False),
    ("q5_k", 40, 256, 33, "swiglu"),
    ("q6_k", 64, 768, 1, "swiglu"),
    ("q6_k", 64, 768, 12, True),
    ("q5_0", 36, 256, 3, False),
    ("q5_1", 36, 256, 9, True),
]


@pytest.mark.parametrize("subgroups", [True, False], ids=["shuffles", "no-shuffles"])
@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_block_linear_matches_gguf_weights(adapter, case, subgroups):
    kind, n, k, tokens, extra = case
    rng = np.random.default_rng(n + k + tokens)
    gtype = GGUF_TYPE[kind]
    raw = random_blocks(gtype, n, k, seed=tokens)
    fmt = BlockFormat(kind)
    params = unpack_blocks(raw, gtype, fmt, "w")
    weight = dequantize(raw, gtype).reshape(n, k).astype(np.float64)
    swiglu, residual = extra == "swiglu", extra is True
    x = rng.standard_normal((tokens, 2 * k if swiglu else k)).astype(np.float32)
    res = rng.standard_normal((tokens, n)).astype(np.float32)
    poisoned = np.full((tokens, n), np.nan, np.float32)  # every element must be written
    spec = GpuLinearSpec(fmt, k, n, "float32", residual, swiglu)
    func = build_gpu_linear(spec, GpuConfig(subgroups=subgroups))
    arrays = [x, *(params[s] for s in fmt.suffixes), *([res] if residual else []), poisoned]
    out = run_prim_func(func, arrays)[-1]
    if swiglu:
        gate, up = x[:, :k].astype(np.float64), x[:, k:].astype(np.float64)
        x = gate / (1 + np.exp(-gate)) * up
    want = x.astype(np.float64) @ weight.T + (res if residual else 0)
    assert np.abs(out - want).max() <= 1e-5 * np.abs(want).max() * np.sqrt(k)
