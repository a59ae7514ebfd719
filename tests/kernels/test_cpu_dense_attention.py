"""The CPU dense attention kernel of image encoders against numpy's softmax(q k^T * s) v, over
shapes whose token count is not a multiple of the row block or of 16 lanes."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.dense_attention import DenseShape, dense_attention_cpu

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})


@pytest.mark.parametrize("heads,tokens,head_dim", [(2, 16, 16), (3, 20, 12), (2, 35, 72)])
def test_matches_numpy(heads, tokens, head_dim):
    shape = DenseShape(heads, tokens, head_dim, head_dim**-0.5)
    lib = tvm.compile(tvm.IRModule({"main": dense_attention_cpu(shape)}), target=TARGET)
    rng = np.random.default_rng(tokens)
    q, k, v = (rng.standard_normal((heads, tokens, head_dim), dtype=np.float32) for _ in "qkv")
    out = np.full((heads, tokens, head_dim), np.nan, np.float32)
    args = [np.ascontiguousarray(a) for a in (q, k.transpose(0, 2, 1), v, out)]
    tensors = [tvm.runtime.tensor(a, tvm.cpu()) for a in args]
    lib["main"](*tensors)
    scores = q @ k.transpose(0, 2, 1) * shape.scale
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    want = weights / weights.sum(-1, keepdims=True) @ v
    np.testing.assert_allclose(tensors[3].numpy(), want, atol=2e-6, rtol=1e-5)


def test_a_shape_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        DenseShape(2, 0, 16, 0.25)
