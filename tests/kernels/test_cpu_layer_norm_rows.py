"""The CPU LayerNorm-of-rows kernel of image encoders (mlcx.kernels.cpu.layer_norm_rows)
against numpy, over widths that are no multiple of its vectors and rows with a large mean
(where E[x^2] - E[x]^2 would cancel)."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.layer_norm_rows import LayerNormRows, layer_norm_rows_cpu

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})


@pytest.mark.parametrize("rows,cols", [(5, 16), (7, 43), (3, 1152)])
def test_matches_numpy(rows, cols):
    shape = LayerNormRows(rows, cols, 1e-6, 2)
    lib = tvm.compile(tvm.IRModule({"main": layer_norm_rows_cpu(shape)}), target=TARGET)
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x[0] += 300.0  # a large mean
    gamma, beta = (rng.standard_normal(cols).astype(np.float32) for _ in "gb")
    out = tvm.runtime.empty((rows, cols), "float32")
    args = [tvm.runtime.tensor(a) for a in (x, gamma, beta)]
    lib["main"](*args, out)
    v = x.astype(np.float64)
    centred = v - v.mean(-1, keepdims=True)
    want = centred / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-6) * gamma + beta
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=2e-5)
