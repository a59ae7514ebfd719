"""The batched LoRA kernels against numpy: each token row adds its own slot's delta, each
output feature reading its fused part's rank block; slot 0 (zeros) adds nothing; A and B stored
as float32 or float16 (the CPU default), math in float32. On CPU they are vector code on every
ISA (FMAs on 512-bit registers on AVX-512, 256-bit on AVX2, NEON; float16 widened by vector
conversions)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm

from mlcx.kernels.lora import LoraOps
from mlcx.kernels.lora_layout import LoraTarget

RANK, SLOTS = 8, 3


def _kernels(target: LoraTarget, kind: str = "cpu", weights: str = "float16"):
    shrink, expand = LoraOps(kind, "float32", weights, RANK, SLOTS)._kernels(target)
    named = {"shrink": shrink, "expand": expand}
    return tvm.IRModule({k: f.with_attr("global_symbol", k) for k, f in named.items()})


def _reference(x, y, a, b, rows, scales, parts):
    out = y.copy()
    ends = np.cumsum((0, *parts))
    for t, slot in enumerate(rows):
        for p in range(len(parts)):
            u = a[slot, p * RANK : (p + 1) * RANK] @ x[t]
            out[t, ends[p] : ends[p + 1]] += scales[t] * (u @ b[slot][:, ends[p] : ends[p + 1]])
    return out


@pytest.mark.parametrize("weights", ["float32", "float16"])
@pytest.mark.parametrize(
    ("features", "parts"), [(64, (64, 32, 32)), (128, (64,)), (40, (48, 48)), (64, (40,))]
)
def test_cpu_kernels_equal_numpy(features, parts, weights):
    target = LoraTarget("t", features, parts)
    lib = tvm.compile(_kernels(target, weights=weights), target="llvm")
    rng = np.random.default_rng(features)
    tokens = 7
    x = rng.standard_normal((tokens, features)).astype("f4")
    y = rng.standard_normal((tokens, sum(parts))).astype("f4")
    a = rng.standard_normal((SLOTS, len(parts) * RANK, features)).astype("f4")
    b = rng.standard_normal((SLOTS, RANK, sum(parts))).astype("f4")
    a[0], b[0] = 0, 0
    a, b = a.astype(weights), b.astype(weights)
    rows = np.array([0, 1, 2, 1, 0, 2, 2], "i4")
    scales = np.array([1, 0.5, 2, 1, 3, 0, 1], "f4")
    dev = tvm.cpu()
    u = tvm.runtime.empty((tokens, len(parts) * RANK), "float32", dev)
    out = tvm.runtime.empty(y.shape, "float32", dev)
    t = lambda z: tvm.runtime.tensor(z, dev)  # noqa: E731
    lib["shrink"](t(x), t(a), t(rows), u)
    lib["expand"](t(y), u, t(b), t(rows), t(scales), out)
    want = _reference(x, y, a.astype("f4"), b.astype("f4"), rows, scales, parts)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(out.numpy()[[0, 4]], y[[0, 4]])  # slot 0 rows: untouched


def _asm(mtriple: str, mcpu: str) -> str:
    target = tvm.target.Target({"kind": "llvm", "mtriple": mtriple, "mcpu": mcpu, "num-cores": 2})
    mod = _kernels(LoraTarget("attn.qkv", 576, (576, 192, 192)))
    return tvm.compile(mod, target).mod.inspect_source("asm")


def test_avx512_fmas_and_widening_on_zmm():
    asm = _asm("x86_64-linux-gnu", "sapphirerapids")
    assert re.search(r"\bvfmadd\w+\s+.*%zmm", asm)
    assert re.search(r"\bvcvtph2ps\s+.*%zmm", asm)


def test_avx2_fmas_and_widening_on_ymm():
    asm = _asm("x86_64-linux-gnu", "haswell")
    assert re.search(r"\bvfmadd\w+\s+.*%ymm", asm) and "%zmm" not in asm
    assert re.search(r"\bvcvtph2ps\s+.*%ymm", asm)


def test_arm64_neon_fmas_and_widening():
    asm = _asm("aarch64-linux-gnu", "neoverse-n1")
    assert re.search(r"\bfmla\s+v\d+\.4s", asm) and re.search(r"\bfcvtl2?\s+v\d+\.4s", asm)
