"""The CPU dense attention kernel of image encoders against numpy's softmax(q k^T * s) v, over
shapes whose token count is not a multiple of the row block or of 16 lanes; its int16 path
against numpy coding q, k, v and the weights the same way, and against the float answer within
what the codes' steps allow."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.dense_attention import DenseShape, dense_attention_cpu
from mlcx.kernels.cpu.dense_scores import code_limit
from mlcx.kernels.cpu.dense_values import VALUE_LIMIT, WEIGHT_LIMIT

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})
SHAPES = [(2, 16, 16), (3, 20, 12), (2, 35, 72), (2, 64, 72), (1, 40, 7), (2, 6, 5)]


def _run(shape: DenseShape, q, k, v) -> np.ndarray:
    lib = tvm.compile(tvm.IRModule({"main": dense_attention_cpu(shape)}), target=TARGET)
    out = np.full(q.shape, np.nan, np.float32)
    keys = k if shape.packs_int16 else k.transpose(0, 2, 1)
    args = [np.ascontiguousarray(a) for a in (q, keys, v, out)]
    tensors = [tvm.runtime.tensor(a, tvm.cpu()) for a in args]
    lib["main"](*tensors)
    return tensors[3].numpy()


def _attention(q, k, v, scale) -> np.ndarray:
    scores = (q.astype(np.float64) @ k.transpose(0, 2, 1).astype(np.float64)) * scale
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True) @ v


def _quantized(x: np.ndarray, limit: int, axis: int = -1) -> np.ndarray:
    """x on the codes -limit..limit of its largest magnitude along axis, back as floats."""
    step = np.maximum(np.abs(x).max(axis, keepdims=True), 1e-30) / limit
    return np.rint(x / step) * step


def _coded_attention(q, k, v, scale) -> np.ndarray:
    """The kernel's int16 path: q and k rows and v columns on codes, the softmax weights
    exp(s - max) on WEIGHT_LIMIT steps, normalized by the total of their codes."""
    limit = code_limit(q.shape[-1])
    scores = _quantized(q, limit) @ _quantized(k, limit).transpose(0, 2, 1) * scale
    codes = np.rint(np.exp(scores - scores.max(-1, keepdims=True)) * WEIGHT_LIMIT)
    return (
        codes @ _quantized(v.astype(np.float64), VALUE_LIMIT, axis=1) / codes.sum(-1, keepdims=True)
    )


def _inputs(heads, tokens, head_dim):
    rng = np.random.default_rng(tokens * head_dim)
    return [rng.standard_normal((heads, tokens, head_dim), dtype=np.float32) for _ in "qkv"]


@pytest.mark.parametrize("heads,tokens,head_dim", SHAPES)
def test_matches_numpy(heads, tokens, head_dim):
    shape = DenseShape(heads, tokens, head_dim, head_dim**-0.5)
    q, k, v = _inputs(heads, tokens, head_dim)
    got = _run(shape, q, k, v)
    np.testing.assert_allclose(got, _attention(q, k, v, shape.scale), atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("heads,tokens,head_dim", SHAPES)
def test_int16_scores_are_the_quantized_attention(heads, tokens, head_dim):
    shape = DenseShape(heads, tokens, head_dim, head_dim**-0.5, int16_scores=True)
    q, k, v = _inputs(heads, tokens, head_dim)
    got = _run(shape, q, k, v)
    vmax = np.abs(v).max()
    if shape.packs_int16:
        # the codes' dot products are exact; float rounding may move a weight's code by one,
        # an output by |v|max over the row's code total (at least WEIGHT_LIMIT)
        want = _coded_attention(q, k, v, shape.scale)
        np.testing.assert_allclose(got, want, atol=2 * vmax / WEIGHT_LIMIT, rtol=1e-5)
    # a score moves by at most scale * d * |q|max * |k|max / limit (half a step on each side),
    # an output by that times |v|max; values by half their step; each weight by half a code
    exact = _attention(q, k, v, shape.scale)
    scores = shape.scale * head_dim * np.abs(q).max() * np.abs(k).max() / code_limit(head_dim)
    bound = 2 * scores * vmax + vmax / VALUE_LIMIT + tokens * vmax / WEIGHT_LIMIT
    assert np.abs(got - exact).max() <= bound


def test_codes_cannot_overflow_an_int32_sum():
    for head_dim in (1, 5, 64, 72, 80, 128, 256):
        assert head_dim * code_limit(head_dim) ** 2 < 2**31
    assert code_limit(72) == 5461 and code_limit(1) == 32767


def test_a_shape_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        DenseShape(2, 0, 16, 0.25)
