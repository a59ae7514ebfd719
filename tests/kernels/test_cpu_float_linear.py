"""mlcx's float-weight CPU linear kernel (mlcx.kernels.cpu.flinear) against numpy for shapes
that are no multiple of its tiles: output rows not a multiple of the GEMM tile (the last tile
is partly zeros and stores only its real rows), plain input rows not a multiple of the
32-feature chunk, at decode's few tokens (GEMV) and prefill's many (GEMM, whose token blocks
have a tail too). Float32 math over the same weights, so the tolerance is rounding."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.target import codegen

from mlcx.kernels.cpu.flinear import build_float_linear
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_kernels import build_linear, can_build
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.quantization.formats import DenseFormat
from tests.support.kernel_cache import cpu_module
from tests.support.linear_reference import input_rows

TARGET = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": 2})
HOST = KernelConfig.for_target(TARGET)
AVX2_LIKE = KernelConfig(threads=2, lanes=8, gemm_rows=16, gemm_tokens=4)  # other tails
TOKENS = [1, 3, 5, 37]  # GEMV (up to gemv_max_tokens), then GEMM with a tail of tokens
EPS = 1e-5


def _run(spec: LinearSpec, cfg: KernelConfig, inputs, weight, residual=None) -> np.ndarray:
    lib = cpu_module(build_linear(spec, cfg), TARGET)  # once for every token count
    extra = [residual] if residual is not None else []
    out = tvm.runtime.empty((inputs[0].shape[0], spec.out_features), "float32")
    lib["main"](
        *[tvm.runtime.tensor(np.ascontiguousarray(a)) for a in [*inputs, weight, *extra]], out
    )
    return out.numpy()


def _check(spec: LinearSpec, cfg: KernelConfig, dtype: str = "float32", residual: bool = False):
    k, n = spec.in_features, spec.out_features
    rng = np.random.default_rng(k * 31 + n)
    weight = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype)
    for tokens in TOKENS:
        width = 2 * k if isinstance(spec.source, SwiGluRows) else k
        inputs = [rng.standard_normal((tokens, width)).astype(np.float32)]
        kind, norm = "plain", None
        if isinstance(spec.source, RmsNormRows):
            kind, norm = "rmsnorm", rng.uniform(0.5, 1.5, k).astype(np.float32)
            inputs.append(norm)
        elif isinstance(spec.source, SwiGluRows):
            kind = "swiglu"
        res = rng.standard_normal((tokens, n)).astype(np.float32) if residual else None
        got = _run(spec, cfg, inputs, weight, res)
        want = input_rows(kind, inputs[0], norm, EPS) @ weight.astype(np.float64).T
        want = want + (res if residual else 0)
        np.testing.assert_allclose(
            got, want, atol=2e-5 * max(1.0, np.abs(want).max()), err_msg=str(tokens)
        )


@pytest.mark.parametrize(
    "n, k",
    [(1, 3), (7, 72), (588, 1152), (4304, 588), (4305, 1152), (588, 3), (7, 588), (4305, 72)],
)
def test_plain_rows_of_any_shape_match_numpy(n, k):
    _check(LinearSpec(PlainRows(k), DenseFormat("float32"), n), HOST)


@pytest.mark.parametrize("n, k", [(588, 72), (4305, 588)])
def test_other_tile_sizes_and_f16_weights_match_numpy(n, k):
    _check(
        LinearSpec(PlainRows(k), DenseFormat("float16"), n, residual=True),
        AVX2_LIKE,
        "float16",
        True,
    )


@pytest.mark.parametrize(
    "source", [RmsNormRows(576, EPS), SwiGluRows(1536)], ids=["rmsnorm", "swiglu"]
)
def test_fused_prologues_with_odd_output_rows_match_numpy(source):
    """A float text model's linears (q0f32) whose rows are not a multiple of the tile."""
    _check(LinearSpec(source, DenseFormat("float32"), 200, residual=True), HOST, residual=True)


def test_fused_prologues_need_whole_chunks():
    spec = LinearSpec(RmsNormRows(100, EPS), DenseFormat("float32"), 64)
    assert not can_build(spec, HOST)
    with pytest.raises(ValueError, match="in_features divisible by 32, not 100"):
        build_float_linear(spec, HOST)
