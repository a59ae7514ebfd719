"""The row-tiled CPU kernels on Q2_K, Q3_K, IQ4_NL and IQ4_XS, against numpy on the weights
`gguf`'s dequantization gives for the same blocks.

int16 activations (decode, drafted tokens, and prefill's shared rows) agree with float math to
a relative 1e-4; the int8 path (long steps under LinearKernels.INT8) with numpy doing the same
int8 rounding, to 1e-3. The stacked-expert kernels share the band microkernel. (IQ4's table
lookup, mlcx.kernels.cpu.byte_table, is checked per instruction in test_cpu_mxfp4.py.)
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import tvm
from gguf.quants import dequantize
from tvm.target import codegen

from mlcx.frontends.gguf.blocks import unpack_blocks
from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels, has_int8_dot
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.qexperts import ExpertSpec, build_expert_linear
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.ggml_blocks import KIND_OF
from tests.kernels.test_cpu_experts import EXPERTS, SLOTS, _reference
from tests.kernels.test_cpu_linear_int8 import _int8_rows
from tests.quantization.test_block_formats import random_blocks
from tests.support.kernel_cache import cpu_module
from tests.support.linear_reference import input_rows

TARGET = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": 2})
GGUF_TYPE = {kind: gtype for gtype, kind in KIND_OF.items()}
CASES = {  # kind -> (row source, K, N, residual); IQ4_NL at SmolLM2's 576-wide rows
    "q2_k": ("rmsnorm", 512, 48, False),
    "q3_k": ("swiglu", 768, 32, True),
    "iq4_nl": ("plain", 576, 64, True),
    "iq4_xs": ("rmsnorm", 512, 48, False),
}


@functools.cache
def _linear(kind: str, kernels: LinearKernels):
    source, k, n, residual = CASES[kind]
    fmt = BlockFormat(kind, tiled=True)
    rows = {"plain": PlainRows(k), "rmsnorm": RmsNormRows(k, 1e-5), "swiglu": SwiGluRows(k)}
    spec = LinearSpec(rows[source], fmt, n, residual)
    func = build_linear(spec, KernelConfig.for_target(TARGET, kernels))
    return cpu_module(func, TARGET)


@functools.cache
def _experts(spec: ExpertSpec):
    """The expert kernel of `spec`, built once for every token count."""
    cfg = KernelConfig.for_target(TARGET)
    return cpu_module(build_expert_linear(spec, cfg), TARGET)


def _run(kind: str, tokens: int, kernels: LinearKernels):
    """(kernel output, the float64 rows it multiplied, gguf's weights, the residual)."""
    source, k, n, residual = CASES[kind]
    rng = np.random.default_rng(tokens + k)
    gtype = GGUF_TYPE[kind]
    raw = random_blocks(gtype, n, k, seed=tokens)
    fmt = BlockFormat(kind, tiled=True)
    planes = unpack_blocks(raw, gtype, fmt, "w")
    x = rng.standard_normal((tokens, 2 * k if source == "swiglu" else k)).astype(np.float32)
    norm = rng.uniform(0.5, 1.5, k).astype(np.float32)
    res = rng.standard_normal((tokens, n)).astype(np.float32)
    args = [x] + ([norm] if source == "rmsnorm" else []) + [planes[s] for s in fmt.suffixes]
    args += [res] if residual else []
    out = tvm.runtime.empty((tokens, n), "float32")
    tensors = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in args]
    _linear(kind, kernels)["main"](*tensors, out)
    weight = dequantize(raw, gtype).reshape(n, k).astype(np.float64)
    return out.numpy(), input_rows(source, x, norm), weight, res if residual else 0


@pytest.mark.parametrize("kind", CASES)
@pytest.mark.parametrize("tokens", [1, 3, 21])  # decode, drafted tokens, prefill's shared rows
def test_int16_kernels_match_gguf_weights(kind, tokens):
    out, rows, weight, res = _run(kind, tokens, LinearKernels.INT16)
    want = rows @ weight.T + res
    assert np.abs(out - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.skipif(not has_int8_dot(TARGET), reason="this CPU has no AVX512-VNNI")
@pytest.mark.parametrize("kind", CASES)
def test_long_steps_match_int8_math(kind):
    out, rows, weight, res = _run(kind, 21, LinearKernels.INT8)
    want = _int8_rows(rows) @ weight.T + res
    assert np.abs(out - want).max() <= 1e-3 * np.abs(want).max()


@pytest.mark.parametrize(
    "kind, per_slot, fused, swiglu, k, n",
    [("q2_k", False, True, False, 256, 32), ("iq4_nl", True, False, True, 64, 48)],
)
@pytest.mark.parametrize("tokens", [1, 21])
def test_experts_match_gguf_weights(kind, per_slot, fused, swiglu, k, n, tokens):
    fmt = BlockFormat(kind, tiled=True)
    spec = ExpertSpec(fmt, EXPERTS, SLOTS, k, n, per_slot, fused, swiglu)
    lib = _experts(spec)
    rng = np.random.default_rng(tokens)
    raw = random_blocks(GGUF_TYPE[kind], spec.weight_rows, k, seed=tokens)
    planes = unpack_blocks(raw, GGUF_TYPE[kind], fmt, "w")
    shape = (tokens, SLOTS, spec.input_width) if per_slot else (tokens, spec.input_width)
    x = rng.standard_normal(shape).astype(np.float32)
    ids = rng.integers(0, EXPERTS - 1, (tokens, SLOTS)).astype(np.int32)
    out = tvm.runtime.empty((tokens, SLOTS, n), "float32")
    lib["main"](*[tvm.runtime.tensor(a) for a in [x, ids, *(planes[s] for s in fmt.suffixes)]], out)
    weight = dequantize(raw, GGUF_TYPE[kind]).reshape(spec.weight_rows, k).astype(np.float64)
    want = _reference(spec, input_rows("swiglu" if swiglu else "plain", x), ids, weight)
    assert np.abs(out.numpy() - want).max() <= 1e-4 * np.abs(want).max()
