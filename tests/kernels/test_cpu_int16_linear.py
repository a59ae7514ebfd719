"""The int16 GEMM of image encoders' linears (mlcx.kernels.cpu.i16linear) against numpy coding
the input rows and weight rows the same way (the int32 sums are exact, so only float rounding
is left), and against the float product within what the codes' steps allow; over shapes that
are no multiple of its tiles (odd features, a partial row tile, a token tail), and read back
as assembly: `vpdpwssd` on AVX512-VNNI parts."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.i16linear import INPUT_LIMIT, TOKENS, WEIGHT_LIMIT, build_int16_linear
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows
from mlcx.quantization.formats import DenseFormat
from mlcx.targets.cpu import llvm_target
from tests.support.kernel_cache import cpu_asm

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})
CONFIG = KernelConfig(threads=2)


def _spec(k: int, n: int) -> LinearSpec:
    return LinearSpec(PlainRows(k), DenseFormat("float32"), n)


def _coded(a: np.ndarray, limit: int) -> np.ndarray:
    """Rows on their codes as the kernel makes them (float32 a * (limit / max)), back as floats."""
    top = np.maximum(np.abs(a).max(-1, keepdims=True), np.float32(1e-30))
    codes = np.rint(a * (np.float32(limit) / top))
    return codes.astype(np.float64) * (top.astype(np.float64) / limit)


@pytest.mark.parametrize("tokens", [1, TOKENS + 3, 37])
@pytest.mark.parametrize("k,n", [(70, 37), (33, 32), (588, 48), (300, 64)])
def test_matches_numpy(tokens, k, n):
    lib = tvm.compile(tvm.IRModule({"main": build_int16_linear(_spec(k, n), CONFIG)}), TARGET)
    rng = np.random.default_rng(k * n + tokens)
    x = rng.standard_normal((tokens, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    out = tvm.runtime.empty((tokens, n), "float32")
    lib["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w), out)
    got = out.numpy()
    want = _coded(x, INPUT_LIMIT) @ _coded(w, WEIGHT_LIMIT).T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # each product moves by at most half a step of each factor times the other's magnitude
    exact = x.astype(np.float64) @ w.T.astype(np.float64)
    xmax, wmax = np.abs(x).max(), np.abs(w).max()
    bound = k * xmax * wmax * (0.5 / INPUT_LIMIT + 0.5 / WEIGHT_LIMIT) * 1.01
    assert np.abs(got - exact).max() <= bound


def test_tile_sums_cannot_overflow_int32():
    from mlcx.kernels.cpu.i16linear import TILE_FEATURES

    assert TILE_FEATURES * INPUT_LIMIT * WEIGHT_LIMIT < 2**31


@pytest.mark.parametrize("mcpu", ["sapphirerapids", "znver4"])
def test_avx512_vnni_cpus_sum_with_vpdpwssd(mcpu):
    target = llvm_target(mcpu, 2, "x86_64-linux-gnu")
    asm = cpu_asm(build_int16_linear(_spec(1152, 64), KernelConfig.for_target(target)), target)
    assert len(re.findall(r"\bvpdpwssd\s+%zmm", asm)) >= 2 * TOKENS  # 8 tokens x 2 row vectors
    assert len(re.findall(r"\bvfmadd\d+ps\s+%zmm", asm)) == 0  # no float products left


def test_encoder_linears_option_names_a_choice():
    from mlcx.targets.base import BuildOptions

    assert BuildOptions(encoder_linears="int16").encoder_linears == "int16"
    with pytest.raises(ValueError, match="float, int16"):
        BuildOptions(encoder_linears="int8")
