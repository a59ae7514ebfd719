"""The CPU state kernels against transformers' functions (tests/support/state_reference), f32
within 1e-4: the short conv (prefill and decode), the chunked delta rule over ragged runs of 1,
5, 64 and 130 rows (chunk tails, several chunks, sequences continuing their slot's state), a
prefill split in two steps equal to one, the decode step continuing a prefilled state, and
copy_states. Fresh sequences' slots hold NaN, which they must not read; other slots must stay
as they were."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.hybrid.conv_cpu import conv_cpu
from mlcx.kernels.hybrid.copy import copy_states
from mlcx.kernels.hybrid.delta_cpu_decode import delta_decode_cpu
from mlcx.kernels.hybrid.delta_cpu_prefill import delta_prefill_cpu
from mlcx.kernels.hybrid.ops import StateOps, StateStep
from mlcx.kernels.hybrid.shapes import ConvShape, DeltaShape
from tests.support.kernel_cache import cpu_module
from tests.support.state_reference import (
    Step,
    conv_inputs,
    conv_reference,
    delta_inputs,
    delta_reference,
    poison,
)

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})
PREFILL = Step.of([1, 5, 64, 130], [0, 3, 0, 9], [3, 0, 5, 1])
DECODE = Step.of([1, 1, 1], [0, 4, 17], [2, 0, 5])
CONVS = [ConvShape(40, 3, bias=True), ConvShape(24, 4, activation="silu")]
DELTAS = [DeltaShape(2, 4, 16, 32), DeltaShape(2, 4, 32, 16, head_order="tiled")]


def _build(func):
    return cpu_module(func, TARGET)["main"]


def call(kernel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    tensors = [tvm.runtime.tensor(a) for a in arrays]
    kernel(*tensors)
    return [t.numpy() for t in tensors]


@pytest.fixture(scope="module")
def delta_kernels():
    return {
        (shape, decode): _build((delta_decode_cpu if decode else delta_prefill_cpu)(shape, 16, 32))
        for shape in DELTAS
        for decode in (False, True)
    }


def run_delta(kernel, shape: DeltaShape, step: Step, inputs) -> tuple[np.ndarray, np.ndarray]:
    o = np.full((step.tokens, shape.v_heads, shape.v_dim), np.nan, np.float32)
    state = poison(inputs["state"], step)
    out = call(kernel, [inputs["qkv"], inputs["g"], inputs["beta"], state, *step.arrays(), o])
    return out[-1], out[3]


@pytest.mark.parametrize("shape", CONVS, ids=["k3-bias", "k4-silu"])
@pytest.mark.parametrize("step", [PREFILL, DECODE], ids=["prefill", "decode"])
def test_conv_matches_transformers(shape, step):
    inputs = conv_inputs(np.random.default_rng(shape.kernel), shape, step)
    tensors = [inputs["x"], inputs["weight"], *([inputs["bias"]] if shape.bias else [])]
    y = np.full_like(inputs["x"], np.nan)
    state = poison(inputs["state"], step)
    out = call(_build(conv_cpu(shape, 8)), [*tensors, state, *step.arrays(), y])
    want_y, want_state = conv_reference(shape, step, inputs)
    np.testing.assert_allclose(out[-1], want_y, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out[len(tensors)], want_state, atol=1e-6)


@pytest.mark.parametrize("shape", DELTAS, ids=["grouped", "tiled"])
@pytest.mark.parametrize("strength", [1.0, 20.0], ids=["decays", "strong-decays"])
def test_chunked_prefill_matches_transformers(delta_kernels, shape, strength):
    """Strong decays take chunk products far below float32's normal range (which the kernel
    flushes, params.FLUSH)."""
    inputs = delta_inputs(np.random.default_rng(1), shape, PREFILL)
    inputs["g"] = inputs["g"] * strength
    o, state = run_delta(delta_kernels[shape, False], shape, PREFILL, inputs)
    want_o, want_state = delta_reference(shape, PREFILL, inputs)
    np.testing.assert_allclose(o, want_o, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(state, want_state, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("shape", DELTAS, ids=["grouped", "tiled"])
def test_decode_matches_the_recurrent_reference(delta_kernels, shape):
    inputs = delta_inputs(np.random.default_rng(2), shape, DECODE)
    o, state = run_delta(delta_kernels[shape, True], shape, DECODE, inputs)
    want_o, want_state = delta_reference(shape, DECODE, inputs, chunked=False)
    np.testing.assert_allclose(o, want_o, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(state, want_state, atol=1e-5, rtol=1e-5)


def test_prefill_in_two_steps_equals_one_and_decode_continues_it(delta_kernels):
    """130 rows at once; or 70 then 60 rows (the second step continuing the slot, across a
    chunk boundary of the first); then a decode step continues the state."""
    shape = DELTAS[0]
    whole = Step.of([130], [0], [4])
    inputs = delta_inputs(np.random.default_rng(3), shape, whole)
    prefill = delta_kernels[shape, False]
    o_once, state_once = run_delta(prefill, shape, whole, inputs)
    first, second = Step.of([70], [0], [4]), Step.of([60], [70], [4])
    o_first, state = run_delta(prefill, shape, first, _rows(inputs, slice(0, 70)))
    o_second, state = run_delta(
        prefill, shape, second, {**_rows(inputs, slice(70, 130)), "state": state}
    )
    np.testing.assert_allclose(np.concatenate([o_first, o_second]), o_once, atol=1e-5)
    np.testing.assert_allclose(state, state_once, atol=1e-5)

    decode = Step.of([1], [130], [4])
    more = {**delta_inputs(np.random.default_rng(4), shape, decode), "state": state}
    o, after = run_delta(delta_kernels[shape, True], shape, decode, more)
    want_o, want_state = delta_reference(shape, decode, more, chunked=False)
    np.testing.assert_allclose(o, want_o, atol=1e-5)
    np.testing.assert_allclose(after, want_state, atol=1e-5)


def _rows(inputs, rows: slice) -> dict[str, np.ndarray]:
    return {k: (v if k == "state" else v[rows]) for k, v in inputs.items()}


@pytest.mark.parametrize("row,dtype", [((4, 16, 16), "float32"), ((40, 3), "float16")])
def test_copy_states_copies_rows_and_nothing_else(row, dtype):
    rng = np.random.default_rng(5)
    state = rng.standard_normal((6, *row)).astype(dtype)
    pairs = np.array([[1, 4], [3, 0]], np.int32)
    got = call(_build(copy_states(row, dtype, gpu=False)), [state, pairs])[0]
    want = state.copy()
    want[4], want[0] = state[1], state[3]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "build,message",
    [
        (lambda: DeltaShape(3, 4, 16, 16), "cannot share 3 key heads"),
        (lambda: DeltaShape(2, 4, 18, 16), "multiple of 4"),
        (lambda: DeltaShape(2, 4, 16, 16, head_order="x"), "grouped or tiled"),
        (lambda: ConvShape(8, 9), "2 to 8 taps"),
        (lambda: ConvShape(8, 4, activation="gelu"), "silu or none"),
        (lambda: StateOps("npu"), "cpu or gpu"),
        (lambda: StateOps("gpu"), "need the TVM target"),
    ],
)
def test_bad_geometry_is_refused_with_the_reason(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_state_of_the_wrong_shape_is_refused():
    from tvm.relax.frontend import nn

    shape = ConvShape(24, 4)
    x = nn.Tensor.placeholder(["tokens", 24], "float32")
    state = nn.Tensor.placeholder(["slots", 24, 2], "float32")  # kernel 3's window
    step = StateStep(*(nn.Tensor.placeholder(["n"], "int32") for _ in range(3)))
    weight = nn.Tensor.placeholder([24, 4], "float32")
    with pytest.raises(ValueError, match="conv state must be float32 with 3 in its last axis"):
        StateOps("cpu").conv(x, state, step, weight, None, shape, decode=False)
