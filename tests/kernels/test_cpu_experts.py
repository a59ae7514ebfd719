"""mlcx's CPU expert kernels (row-tiled stacked weights, rows grouped by expert) against numpy
gathering each slot's expert from the dequantized stacked weight.

Int16 activations agree with float math to a relative 1e-4; the int8 path (long steps under
LinearKernels.INT8) to int8's rounding. Routing is random with repeats and unused experts, so
an expert's group is empty, one row, or longer than a token block.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm.target import codegen

from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels, has_int8_dot
from mlcx.kernels.cpu.qexperts import ExpertSpec, build_expert_linear
from mlcx.quantization.formats import format_from_name
from tests.support.kernel_cache import cpu_module
from tests.support.linear_reference import input_rows

TARGET = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": 2})
HAS_VNNI = has_int8_dot(TARGET)
EXPERTS, SLOTS = 6, 2


def _reference(spec: ExpertSpec, x, ids, weight):
    """out[t, j] = x_row @ W_e.T with W_e expert ids[t, j]'s rows (gate, then up, if fused)."""
    n = spec.out_features
    if spec.fused:
        half = n // 2
        gate, up = weight[: EXPERTS * half], weight[EXPERTS * half :]
        per_expert = [
            np.concatenate([gate[e * half : (e + 1) * half], up[e * half : (e + 1) * half]])
            for e in range(EXPERTS)
        ]
    else:
        per_expert = [weight[e * n : (e + 1) * n] for e in range(EXPERTS)]
    out = np.zeros(ids.shape + (n,))
    for t, j in np.ndindex(ids.shape):
        row = x[t, j] if spec.per_slot else x[t]
        out[t, j] = row.astype(np.float64) @ per_expert[ids[t, j]].T
    return out


def _run(spec: ExpertSpec, tokens: int, kernels: LinearKernels, seed: int):
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((spec.weight_rows, spec.in_features)).astype(np.float32) * 0.05
    planes = spec.fmt.pack(dense)
    x_shape = (tokens, SLOTS, spec.input_width) if spec.per_slot else (tokens, spec.input_width)
    x = rng.standard_normal(x_shape).astype(np.float32)
    ids = rng.integers(0, EXPERTS - 1, (tokens, SLOTS)).astype(np.int32)  # the last one unused
    cfg = KernelConfig.for_target(TARGET, kernels)
    lib = cpu_module(build_expert_linear(spec, cfg), TARGET)  # once for every token count
    out = tvm.runtime.empty((tokens, SLOTS, spec.out_features), "float32")
    args = [x, ids] + [planes[s] for s in spec.fmt.suffixes]
    lib["main"](*[tvm.runtime.tensor(a) for a in args], out)
    rows = input_rows("swiglu" if spec.swiglu else "plain", x)
    want = _reference(spec, rows, ids, spec.fmt.unpack(planes).astype(np.float64))
    return out.numpy(), want


@pytest.mark.parametrize(
    "fmt_name, per_slot, fused, swiglu, k, n",
    [
        ("int4-sym-g32-float16-t16", False, True, False, 64, 64),  # Q4_0 gate/up, fused halves
        ("int4-sym-g32-float16-t16", True, False, True, 32, 64),  # Q4_0 down of silu(gate) * up
        ("q4_k-t16", False, True, False, 256, 32),  # K-quant super-blocks of 256
        ("int8-sym-g32-float16-t16", True, False, False, 64, 48),  # Q8_0 down, a row per slot
    ],
)
@pytest.mark.parametrize("tokens", [1, 21])  # a decode step; groups past a token block
def test_experts_match_numpy(fmt_name, per_slot, fused, swiglu, k, n, tokens):
    fmt = format_from_name(fmt_name)
    spec = ExpertSpec(fmt, EXPERTS, SLOTS, k, n, per_slot, fused, swiglu)
    got, want = _run(spec, tokens, LinearKernels.INT16, tokens + k)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.skipif(not HAS_VNNI, reason="int8 kernels need AVX512-VNNI")
def test_long_steps_take_int8_where_asked():
    spec = ExpertSpec(
        format_from_name("int4-sym-g32-float16-t16"), EXPERTS, SLOTS, 64, 64, False, True
    )
    got, want = _run(spec, 21, LinearKernels.INT8, 5)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert 1e-4 < err < 3e-2  # int8's rounding, not int16's


def test_shapes_that_do_not_tile_are_refused():
    with pytest.raises(ValueError, match="divisible"):
        ExpertSpec(format_from_name("int4-sym-g32-float16-t16"), 4, 2, 64, 40)
