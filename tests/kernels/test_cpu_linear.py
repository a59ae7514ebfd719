"""mlcx's hand-written CPU linear kernels against numpy on the dequantized weights.

Shapes are SmolLM2's (K = 576 and 1536), so the decode (GEMV, up to 8 tokens) and prefill
(packed GEMM) paths, their tails, and the fused RMSNorm / SwiGLU / residual all run. The
kernels quantize activations to int16 per 32 features, so they agree with float math to a
relative 1e-4, not bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.target import codegen

from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows
from mlcx.quantization.formats import format_from_name
from tests.support.kernel_cache import cpu_module
from tests.support.linear_reference import input_rows

TARGET = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": 2})
EPS = 1e-5


def _rows(kind: str, k: int):
    return {"plain": PlainRows(k), "rmsnorm": RmsNormRows(k, EPS), "swiglu": SwiGluRows(k)}[kind]


def _inputs(kind: str, tokens: int, k: int, rng) -> list[np.ndarray]:
    x = rng.standard_normal((tokens, 2 * k if kind == "swiglu" else k)).astype(np.float32)
    return [x, rng.uniform(0.5, 1.5, k).astype(np.float32)] if kind == "rmsnorm" else [x]


@pytest.mark.parametrize(
    "fmt_name, kind, k, n, residual",
    [
        ("int4-affine-g32-float16", "rmsnorm", 576, 960, False),  # GGUF Q4_1
        ("int4-affine-g32-float16", "swiglu", 1536, 576, True),
        ("int4-sym-g32-float32", "plain", 576, 200, True),  # mlcx q4f32, rows not a multiple of 8
        ("int8-sym-g32-float16", "rmsnorm", 576, 1000, False),  # GGUF Q8_0 head
        ("int4-affine-g32-float16-t16", "rmsnorm", 576, 960, False),  # row-tiled (the default)
        ("int4-sym-g32-float32-t16", "swiglu", 1536, 576, True),
        ("int8-sym-g32-float16-t16", "plain", 576, 1008, False),
    ],
)
@pytest.mark.parametrize("tokens", [1, 2, 3, 4, 5, 8, 9, 19, 40])
def test_kernel_matches_numpy(fmt_name, kind, k, n, residual, tokens):
    rng = np.random.default_rng(tokens * 7 + k)
    fmt = format_from_name(fmt_name)
    dense = rng.standard_normal((n, k)).astype(np.float32) * 0.05
    planes = fmt.pack(dense)
    weight = fmt.unpack(planes).astype(np.float64)
    spec = LinearSpec(_rows(kind, k), fmt, n, residual)
    lib = cpu_module(build_linear(spec, KernelConfig.for_target(TARGET)), TARGET)
    inputs = _inputs(kind, tokens, k, rng)
    res = rng.standard_normal((tokens, n)).astype(np.float32)
    args = inputs + [planes[s] for s in fmt.suffixes] + ([res] if residual else [])
    out = tvm.runtime.empty((tokens, n), "float32")
    lib["main"](*[tvm.runtime.tensor(np.ascontiguousarray(a)) for a in args], out)
    rows = input_rows(kind, inputs[0], inputs[1] if kind == "rmsnorm" else None, EPS)
    want = rows @ weight.T + (res if residual else 0)
    scale = np.abs(want).max()
    assert np.abs(out.numpy() - want).max() <= 1e-4 * scale
