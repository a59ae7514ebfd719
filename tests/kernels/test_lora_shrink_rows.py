"""The CPU LoRA shrink that computes its input's RMSNorm or SwiGLU itself
(mlcx.kernels.cpu.lora_shrink) against numpy: u = op(inputs) @ A[slot].T per token, A stored
as float32 or float16, for one token and for more tokens than threads."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.lora_shrink import ShrinkSpec, build_lora_shrink
from mlcx.kernels.cpu.rows import PlainRows, RmsNormRows, SwiGluRows

SLOTS, WIDTH, FEATURES, EPS = 3, 24, 96, 1e-5


def _rms_norm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w


def _swiglu(gate_up):
    gate, up = np.split(gate_up, 2, axis=-1)
    return gate / (1 + np.exp(-gate)) * up


# source -> (its inputs for `tokens` rows, the rows it stands for)
SOURCES = {
    "plain": (PlainRows(FEATURES), lambda r, t: [r.standard_normal((t, FEATURES))], lambda x: x),
    "rmsnorm": (
        RmsNormRows(FEATURES, EPS),
        lambda r, t: [3 * r.standard_normal((t, FEATURES)), r.standard_normal(FEATURES)],
        _rms_norm,
    ),
    "swiglu": (
        SwiGluRows(FEATURES),
        lambda r, t: [2 * r.standard_normal((t, 2 * FEATURES))],
        _swiglu,
    ),
}


@pytest.mark.parametrize("weights", ["float32", "float16"])
@pytest.mark.parametrize("tokens", [1, 5])
@pytest.mark.parametrize("source", list(SOURCES))
def test_the_shrink_computes_its_row_source(source, tokens, weights):
    rows_of, inputs_of, reference = SOURCES[source]
    spec = ShrinkSpec(rows_of, WIDTH, SLOTS, weights, threads=2)
    func = build_lora_shrink(spec).with_attr("global_symbol", "main")
    lib = tvm.compile(tvm.IRModule({"main": func}), target="llvm")
    rng = np.random.default_rng(tokens)
    inputs = [v.astype("f4") for v in inputs_of(rng, tokens)]
    a = rng.standard_normal((SLOTS, WIDTH, FEATURES)).astype(weights)
    slots = rng.integers(0, SLOTS, tokens).astype("i4")
    dev = tvm.cpu()
    u = tvm.runtime.tensor(np.zeros((tokens, WIDTH), "f4"), dev)
    args = [tvm.runtime.tensor(v, dev) for v in (*inputs, a, slots)]
    lib["main"](*args, u)
    x = reference(*(v.astype("f8") for v in inputs))
    want = np.einsum("tk,tjk->tj", x, a.astype("f8")[slots])
    np.testing.assert_allclose(u.numpy(), want, rtol=1e-5, atol=1e-4)


def test_features_off_the_chunk_are_refused():
    with pytest.raises(ValueError, match="divisible by 32"):
        ShrinkSpec(RmsNormRows(40, EPS), WIDTH, SLOTS, "float32", 2)
