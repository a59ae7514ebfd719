"""mlcx's row-tiled CPU kernels on MXFP4 (dense linears and stacked experts, int16 and int8
activations), against numpy on the weights `gguf`'s dequantization gives for the same blocks,
and the byte-table lookup they decode E2M1 codes with, on each shuffle this CPU has.

Block exponents are gpt-oss's range (2**-10 .. 2**5 per block); codes random. int16
activations agree with float math to a relative 1e-4; int8 (long steps under
LinearKernels.INT8) to int8's rounding.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import tvm
from gguf import GGMLQuantizationType as GT
from gguf.quants import dequantize
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T
from tvm.target import codegen

from mlcx.kernels.cpu import byte_table
from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels, cpu_features
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.qexperts import ExpertSpec, build_expert_linear
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.kernels.moe_options import GPT_OSS_GLU, SILU
from mlcx.quantization import mxfp4_blocks as mb
from mlcx.quantization.mxfp4 import E2M1_TWICE, Mxfp4Format
from tests.support.kernel_cache import cpu_module
from tests.support.linear_reference import input_rows
from tests.support.moe_reference import experts_numpy, glu_numpy
from tests.support.mxfp4_reference import random_ggml, realistic_exponents

TARGET = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": 2})
FEATURES = cpu_features(TARGET)
HAS_VNNI = KernelConfig.for_target(TARGET).int8_dot
FMT = Mxfp4Format(tiled=True)
EXPERTS, SLOTS = 5, 2


def mxfp4_weight(n: int, k: int, seed: int):
    """(tiled planes, float64 weights gguf dequantizes the same blocks to)."""
    raw = random_ggml(n, k, seed, realistic_exponents((n, k // 32), seed + 1))
    weight = dequantize(raw, GT.MXFP4).reshape(n, k).astype(np.float64)
    return mb.from_ggml(raw, FMT), weight


def _relative(got, want) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("shuffle", ["avx512bw", "avx2", "ssse3", "neon", ""])
def test_byte_table_lookup(shuffle):
    if shuffle and shuffle not in FEATURES:
        pytest.skip(f"this CPU has no {shuffle}")
    table = [v + 12 for v in E2M1_TWICE]
    with IRBuilder() as ib, T.prim_func():
        T.func_name("lookup")
        index = T.match_buffer(T.arg("index", T.handle()), (4, 64), "int8")
        out = T.match_buffer(T.arg("out", T.handle()), (4, 64), "int8")
        with T.serial(0, 4) as i:
            found = byte_table.lookup16(table, index[i, T.Ramp(0, 1, 64)], 64, shuffle)
            T.buffer_store(out, found, [i, T.Ramp(0, 1, 64)])
    codes = np.random.default_rng(0).integers(0, 16, (4, 64)).astype(np.int8)
    lib = cpu_module(ib.get(), TARGET)
    got = tvm.runtime.empty((4, 64), "int8")
    lib["main"](tvm.runtime.tensor(codes), got)
    np.testing.assert_array_equal(got.numpy(), np.asarray(table, np.int8)[codes])


@pytest.mark.parametrize("source", ["plain", "rmsnorm", "swiglu"])
def test_dense_linear_int16(source):
    k, n = 256, 48
    planes, weight = mxfp4_weight(n, k, seed=len(source))
    rows = {"plain": PlainRows(k), "rmsnorm": RmsNormRows(k, 1e-5), "swiglu": SwiGluRows(k)}
    residual = source == "swiglu"
    spec = LinearSpec(rows[source], FMT, n, residual)
    lib = cpu_module(build_linear(spec, KernelConfig.for_target(TARGET)), TARGET)
    rng = np.random.default_rng(7)
    norm = rng.uniform(0.5, 1.5, k).astype(np.float32)
    for tokens in (1, 3, 9, 21):  # decode, drafted tokens, a token block, the shared-row path
        x = rng.standard_normal((tokens, 2 * k if source == "swiglu" else k)).astype(np.float32)
        res = rng.standard_normal((tokens, n)).astype(np.float32)
        args = [x] + ([norm] if source == "rmsnorm" else []) + [planes[s] for s in FMT.suffixes]
        out = tvm.runtime.empty((tokens, n), "float32")
        lib["main"](*[tvm.runtime.tensor(a) for a in args + ([res] if residual else [])], out)
        want = input_rows(source, x, norm) @ weight.T + (res if residual else 0)
        assert _relative(out.numpy(), want) <= 1e-4, tokens


@pytest.mark.skipif(not HAS_VNNI, reason="int8 kernels need AVX512-VNNI")
def test_dense_linear_int8_for_long_steps():
    k, n = 256, 32
    planes, weight = mxfp4_weight(n, k, seed=9)
    spec = LinearSpec(PlainRows(k), FMT, n)
    func = build_linear(spec, KernelConfig.for_target(TARGET, LinearKernels.INT8))
    rng = np.random.default_rng(8)
    lib = cpu_module(func, TARGET)
    for tokens, low, high in ((3, 0.0, 1e-4), (21, 1e-4, 3e-2)):  # int16 up to 16 tokens
        x = rng.standard_normal((tokens, k)).astype(np.float32)
        out = tvm.runtime.empty((tokens, n), "float32")
        lib["main"](*[tvm.runtime.tensor(a) for a in [x, *planes.values()]], out)
        assert low <= _relative(out.numpy(), x.astype(np.float64) @ weight.T) <= high


def _expert_spec(kind: str) -> ExpertSpec:
    """gate_up (fused halves, a bias), or down over gpt-oss's clamped SwiGLU of a gate/up
    input (a bias) or over plain SwiGLU (none)."""
    k, n = (64, 64) if kind == "gate_up" else (32, 48)
    return ExpertSpec(
        FMT, EXPERTS, SLOTS, k, n, per_slot=kind != "gate_up", fused=kind == "gate_up",
        swiglu=kind != "gate_up", bias=kind != "down_silu",
        glu=GPT_OSS_GLU if kind == "down_gpt_oss" else SILU,
    )  # fmt: skip


@functools.cache
def _expert_kernel(kind: str, kernels: LinearKernels):
    func = build_expert_linear(_expert_spec(kind), KernelConfig.for_target(TARGET, kernels))
    return cpu_module(func, TARGET)


def _expert_case(kind: str, tokens: int, seed: int, kernels=LinearKernels.INT16):
    """(got, want) of one expert kernel on random routing (the last expert unused)."""
    spec, rng = _expert_spec(kind), np.random.default_rng(seed)
    k, n = spec.in_features, spec.out_features
    planes, weight = mxfp4_weight(spec.weight_rows, k, seed)
    bias = rng.standard_normal(spec.weight_rows).astype(np.float32)
    x_shape = (tokens, SLOTS, 2 * k) if spec.per_slot else (tokens, k)
    spread = 4.0 if spec.glu == GPT_OSS_GLU else 1.0  # past the clamps at 7
    x = (rng.standard_normal(x_shape) * spread).astype(np.float32)
    ids = rng.integers(0, EXPERTS - 1, (tokens, SLOTS)).astype(np.int32)
    args = [x, ids, *planes.values(), *([bias] if spec.bias else [])]
    out = tvm.runtime.empty((tokens, SLOTS, n), "float32")
    _expert_kernel(kind, kernels)["main"](*[tvm.runtime.tensor(a) for a in args], out)
    rows = glu_numpy(x, spec.glu) if spec.swiglu else x
    b = bias.astype(np.float64) if spec.bias else None
    return out.numpy(), experts_numpy(rows, ids, weight, EXPERTS, n, spec.fused, spec.per_slot, b)


@pytest.mark.parametrize("kind", ["gate_up", "down_gpt_oss", "down_silu"])
@pytest.mark.parametrize("tokens", [1, 21])  # a decode step; groups past a token block
def test_experts_int16(kind, tokens):
    got, want = _expert_case(kind, tokens, seed=tokens + len(kind))
    assert _relative(got, want) <= 1e-4


@pytest.mark.skipif(not HAS_VNNI, reason="int8 kernels need AVX512-VNNI")
def test_experts_int8_for_long_steps():
    got, want = _expert_case("down_gpt_oss", 21, seed=3, kernels=LinearKernels.INT8)
    assert 1e-4 < _relative(got, want) < 3e-2  # int8's rounding, not int16's
