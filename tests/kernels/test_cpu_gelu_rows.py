"""The CPU GELU-of-rows-plus-bias kernel of image encoders (mlcx.kernels.cpu.gelu_rows) against
numpy's tanh formula, over widths that are no multiple of its vectors and values far in both
tails (where a naive exp would overflow)."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.gelu_rows import GeluRows, gelu_rows_cpu

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})


def _gelu_tanh(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float64)
    return 0.5 * v * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (v + 0.044715 * v**3)))


@pytest.mark.parametrize("rows,cols", [(5, 16), (7, 43), (3, 4304)])
def test_matches_numpy(rows, cols):
    shape = GeluRows(rows, cols, 2)
    lib = tvm.compile(tvm.IRModule({"main": gelu_rows_cpu(shape)}), target=TARGET)
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    x[0, :3] = [-60.0, 60.0, -9.0]  # the tails: 0, v, and a tiny negative value
    bias = rng.standard_normal(cols).astype(np.float32)
    out = tvm.runtime.empty((rows, cols), "float32")
    lib["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(bias), out)
    want = _gelu_tanh(x + bias)
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=1e-7)
