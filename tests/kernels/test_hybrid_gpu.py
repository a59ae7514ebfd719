"""The GPU state kernels on this machine's wgpu adapter (lavapipe), through the WebGPU plan
machinery, against transformers' functions as in test_hybrid_cpu: the short conv (prefill and
decode layouts), the delta rule's decode step, its chunked prefill (the chunks, solve and scan
kernels chained through their scratch), and copy_states."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.kernels.hybrid.conv_gpu import conv_gpu
from mlcx.kernels.hybrid.copy import copy_states
from mlcx.kernels.hybrid.delta_gpu_chunks import delta_chunks_gpu, delta_solve_gpu
from mlcx.kernels.hybrid.delta_gpu_decode import delta_decode_gpu
from mlcx.kernels.hybrid.delta_gpu_scan import delta_scan_gpu
from mlcx.kernels.hybrid.shapes import CHUNK, ConvShape, DeltaShape
from tests.support.state_reference import (
    Step,
    conv_inputs,
    conv_reference,
    delta_inputs,
    delta_reference,
    poison,
)
from tests.support.wgpu_prim import run_prim_func

PREFILL = Step.of([1, 5, 64, 130], [0, 3, 0, 9], [3, 0, 5, 1])
DECODE = Step.of([1, 1, 1], [0, 4, 17], [2, 0, 5])


def _named(func, name: str):
    return func.with_attr("global_symbol", name)


@pytest.mark.parametrize("step", [PREFILL, DECODE], ids=["prefill", "decode"])
def test_conv_matches_transformers(adapter, step):
    shape = ConvShape(72, 4, bias=True, activation="silu")  # 72: a partly filled workgroup
    decode = step is DECODE
    inputs = conv_inputs(np.random.default_rng(0), shape, step)
    y = np.full_like(inputs["x"], np.nan)
    tensors = [inputs["x"], inputs["weight"], inputs["bias"]]
    state = poison(inputs["state"], step)
    func = _named(conv_gpu(shape, decode), "conv")
    out = run_prim_func(func, [*tensors, state, *step.arrays(), y])
    want_y, want_state = conv_reference(shape, step, inputs)
    np.testing.assert_allclose(out[-1], want_y, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out[3], want_state, atol=1e-6)


@pytest.mark.parametrize(
    "shape", [DeltaShape(2, 4, 16, 32), DeltaShape(2, 4, 32, 16, head_order="tiled")]
)
def test_decode_matches_the_recurrent_reference(adapter, shape):
    inputs = delta_inputs(np.random.default_rng(2), shape, DECODE)
    o = np.full((DECODE.tokens, shape.v_heads, shape.v_dim), np.nan, np.float32)
    arrays = [inputs["qkv"], inputs["g"], inputs["beta"], poison(inputs["state"], DECODE)]
    out = run_prim_func(_named(delta_decode_gpu(shape), "dd"), [*arrays, *DECODE.arrays(), o])
    want_o, want_state = delta_reference(shape, DECODE, inputs, chunked=False)
    np.testing.assert_allclose(out[-1], want_o, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out[3], want_state, atol=1e-5, rtol=1e-5)


def test_chunked_prefill_matches_transformers(adapter):
    shape = DeltaShape(2, 4, 32, 16, head_order="tiled")
    step = PREFILL
    inputs = delta_inputs(np.random.default_rng(1), shape, step)
    hv, n = shape.v_heads, step.tokens
    qkv, g, beta = inputs["qkv"], inputs["g"], inputs["beta"]

    def empty(*dims):
        return np.full((n, hv, *dims), np.nan, np.float32)

    out = run_prim_func(
        _named(delta_chunks_gpu(shape), "chunks"),
        [qkv, g, beta, step.q_indptr, empty(3), empty(CHUNK), empty(CHUNK)],
    )
    rows, a, p = out[4:]
    u = empty(shape.v_dim + shape.k_dim)
    u = run_prim_func(
        _named(delta_solve_gpu(shape), "solve"), [qkv, beta, step.q_indptr, rows, a, u]
    )[-1]
    o = empty(shape.v_dim)
    state = poison(inputs["state"], step)
    out = run_prim_func(
        _named(delta_scan_gpu(shape), "scan"), [qkv, rows, p, u, state, *step.arrays(), o]
    )
    want_o, want_state = delta_reference(shape, step, inputs)
    np.testing.assert_allclose(out[-1], want_o, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(out[4], want_state, atol=1e-4, rtol=1e-4)


def test_copy_states_copies_rows_and_nothing_else(adapter):
    row = (2, 16, 24)  # 768 elements: three rounds of a workgroup
    state = np.random.default_rng(5).standard_normal((5, *row)).astype(np.float32)
    pairs = np.array([[1, 4], [3, 0]], np.int32)
    got = run_prim_func(_named(copy_states(row, "float32", gpu=True), "copy"), [state, pairs])[0]
    want = state.copy()
    want[4], want[0] = state[1], state[3]
    np.testing.assert_array_equal(got, want)
