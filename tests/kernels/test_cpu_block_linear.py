"""The row-tiled CPU linear kernels on the 5-bit and K-quant formats, against numpy on the
weights `gguf`'s dequantization gives for the same blocks.

Shapes have K a multiple of 256 (K-quant super-blocks); token counts cover decode, a few
drafted tokens, and prefill's shared-row path (more than 16 tokens) with its tails. The
kernels quantize activations to int16 per 32 features, so they agree with float math to a
relative 1e-4, not bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from gguf.quants import dequantize
from tvm.target import codegen

from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.ggml_blocks import KIND_OF
from tests.quantization.test_block_formats import random_blocks
from tests.support.kernel_cache import cpu_module
from tests.support.linear_reference import input_rows

TARGET = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": 2})
GGUF_TYPE = {kind: gtype for gtype, kind in KIND_OF.items()}


def _source(kind: str, k: int):
    return {"plain": PlainRows(k), "rmsnorm": RmsNormRows(k, 1e-5), "swiglu": SwiGluRows(k)}[kind]


@pytest.mark.parametrize(
    "kind, source, k, n, residual",
    [
        ("q4_k", "rmsnorm", 512, 96, False),
        ("q5_k", "plain", 512, 48, True),
        ("q6_k", "swiglu", 768, 64, True),
        ("q5_0", "plain", 512, 32, False),
        ("q5_1", "rmsnorm", 256, 48, False),
    ],
)
@pytest.mark.parametrize("tokens", [1, 3, 9, 21])
def test_tiled_block_kernel_matches_gguf_weights(kind, source, k, n, residual, tokens):
    rng = np.random.default_rng(tokens + k)
    gtype = GGUF_TYPE[kind]
    raw = random_blocks(gtype, n, k, seed=tokens)
    fmt = BlockFormat(kind, tiled=True)
    planes = unpack_blocks(raw, gtype, fmt, "w")
    weight = dequantize(raw, gtype).reshape(n, k).astype(np.float64)
    spec = LinearSpec(_source(source, k), fmt, n, residual)
    func = build_linear(spec, KernelConfig.for_target(TARGET))
    lib = cpu_module(func, TARGET)
    x = rng.standard_normal((tokens, 2 * k if source == "swiglu" else k)).astype(np.float32)
    norm = rng.uniform(0.5, 1.5, k).astype(np.float32)
    res = rng.standard_normal((tokens, n)).astype(np.float32)
    args = [x] + ([norm] if source == "rmsnorm" else []) + [planes[s] for s in fmt.suffixes]
    args += [res] if residual else []
    out = tvm.runtime.empty((tokens, n), "float32")
    lib["main"](*[tvm.runtime.tensor(np.ascontiguousarray(a)) for a in args], out)
    want = input_rows(source, x, norm) @ weight.T + (res if residual else 0)
    assert np.abs(out.numpy() - want).max() <= 1e-4 * np.abs(want).max()
