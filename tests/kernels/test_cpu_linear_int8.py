"""The int8-activation prefill path (LinearKernels.INT8) against numpy doing the same int8 math.

A step of more than 16 tokens quantizes each row to int8 per 32 features and multiplies the
4-bit tiled codes with `vpdpbusd`; the reference quantizes the same rows the same way in
numpy, so the two agree to float rounding (a code that rounds the other way on a tie moves an
output by about 1e-3 of its scale, which the tolerance allows; a wrong feature order or scale
moves it by the whole scale). Steps of 16 tokens or fewer stay int16, to 1e-4 of float math.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.target import codegen

from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels, has_int8_dot
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.quantization.formats import format_from_name
from tests.support.kernel_cache import cpu_module
from tests.support.linear_reference import input_rows

TARGET = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": 2})
EPS = 1e-5
HAS_VNNI = has_int8_dot(TARGET)
needs_vnni = pytest.mark.skipif(not HAS_VNNI, reason="this CPU has no AVX512-VNNI")


def _int8_rows(rows: np.ndarray) -> np.ndarray:
    """rows rounded through int8 codes with one scale per 32 features, as the kernel does."""
    chunks = rows.astype(np.float32).reshape(rows.shape[0], -1, 32)
    amax = np.abs(chunks).max(-1, keepdims=True)
    inv = np.where(amax > 0, np.float32(127.0) / np.maximum(amax, 1e-30), 0).astype(np.float32)
    codes = np.round(chunks * inv)
    return (codes * (amax / np.float32(127.0))).reshape(rows.shape).astype(np.float64)


def _run(fmt_name: str, kind: str, k: int, n: int, tokens: int, rng):
    fmt = format_from_name(fmt_name)
    planes = fmt.pack(rng.standard_normal((n, k)).astype(np.float32) * 0.05)
    sources = {"plain": PlainRows(k), "rmsnorm": RmsNormRows(k, EPS), "swiglu": SwiGluRows(k)}
    cfg = KernelConfig.for_target(TARGET, LinearKernels.INT8)
    spec = LinearSpec(sources[kind], fmt, n, residual=False)
    lib = cpu_module(build_linear(spec, cfg), TARGET)
    x = rng.standard_normal((tokens, 2 * k if kind == "swiglu" else k)).astype(np.float32)
    norm = rng.uniform(0.5, 1.5, k).astype(np.float32)
    args = [x, norm] if kind == "rmsnorm" else [x]
    out = tvm.runtime.empty((tokens, n), "float32")
    tensors = [tvm.runtime.tensor(a) for a in args + [planes[s] for s in fmt.suffixes]]
    lib["main"](*tensors, out)
    rows = input_rows(kind, x, norm, EPS)
    return out.numpy(), rows, fmt.unpack(planes).astype(np.float64)


@needs_vnni
@pytest.mark.parametrize(
    "fmt_name, kind, k, n, tokens",
    [
        ("int4-affine-g32-float16-t16", "rmsnorm", 576, 960, 17),  # GGUF Q4_1, row-tiled
        ("int4-sym-g32-float16-t16", "swiglu", 1536, 576, 40),  # GGUF Q4_0
        ("q4_k-t16", "plain", 512, 192, 40),  # K-quant super-blocks of 256
        ("q5_0-t16", "rmsnorm", 576, 192, 17),  # a fifth bit from the high plane, centred codes
        ("q5_k-t16", "swiglu", 512, 192, 25),
        ("q6_k-t16", "plain", 512, 192, 17),  # scales per 16, codes centred on 32
    ],
)
def test_long_steps_match_int8_math(fmt_name, kind, k, n, tokens):
    out, rows, weight = _run(fmt_name, kind, k, n, tokens, np.random.default_rng(tokens + k))
    want = _int8_rows(rows) @ weight.T
    assert np.abs(out - want).max() <= 1e-3 * np.abs(want).max()
    # and int8 is a real approximation of the float product, not a different one
    exact = rows @ weight.T
    assert np.abs(out - exact).max() <= 3e-2 * np.abs(exact).max()


@needs_vnni
def test_short_steps_stay_int16():
    out, rows, weight = _run(
        "int4-sym-g32-float16-t16", "plain", 576, 192, 16, np.random.default_rng(3)
    )
    want = rows @ weight.T
    assert np.abs(out - want).max() <= 1e-4 * np.abs(want).max()


def test_int8_without_vnni_is_refused():
    avx2 = tvm.target.Target({"kind": "llvm", "mcpu": "znver3", "num-cores": 2})
    with pytest.raises(ValueError, match="AVX512-VNNI"):
        KernelConfig.for_target(avx2, LinearKernels.INT8)
