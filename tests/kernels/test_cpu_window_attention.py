"""The CPU attention of Qwen-VL's encoder against numpy: one kernel for any patch count, over
the whole image or within windows (runs of equal window ids, of sizes that do not line up with
the row block or the 16 key lanes), including the last keys of the image."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.cpu.window_attention import WindowShape, window_attention_cpu
from tests.support.kernel_cache import cpu_module

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})
PATCHES = (1, 5, 36, 100, 261)  # one kernel serves every count


def _reference(q, k, v, scale, windows):
    scores = q @ k.transpose(0, 2, 1) * scale
    if windows is not None:
        scores = np.where(windows[:, None] == windows[None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True) @ v


def _windows(rng, n: int) -> np.ndarray:
    """Window ids in runs of 4 to 64 patches (merge groups of 4, as the runtime lays them)."""
    sizes = []
    while sum(sizes) < n:
        sizes.append(int(rng.choice([4, 8, 12, 28, 64])))
    sizes[-1] -= sum(sizes) - n
    return np.repeat(np.arange(len(sizes)), sizes).astype(np.int32)


@pytest.mark.parametrize("windowed", [True, False], ids=["windows", "whole"])
@pytest.mark.parametrize("heads,head_dim", [(2, 16), (3, 80), (2, 72)])
def test_matches_numpy_at_every_patch_count(windowed, heads, head_dim):
    shape = WindowShape(heads, head_dim, head_dim**-0.5, windowed)
    lib = cpu_module(window_attention_cpu(shape), TARGET)
    rng = np.random.default_rng(head_dim)
    for n in PATCHES:
        q, k, v = (rng.standard_normal((heads, n, head_dim), dtype=np.float32) for _ in "qkv")
        windows = _windows(rng, n) if windowed else None
        out = np.full((heads, n, head_dim), np.nan, np.float32)
        args = [q, np.ascontiguousarray(k.transpose(0, 2, 1)), v]
        args += [windows] * windowed + [out]
        tensors = [tvm.runtime.tensor(a, tvm.cpu()) for a in args]
        lib[shape.name](*tensors)
        want = _reference(q, k, v, shape.scale, windows)
        np.testing.assert_allclose(tensors[-1].numpy(), want, atol=2e-6, rtol=1e-5, err_msg=f"{n}")


def test_a_shape_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        WindowShape(2, 0, 0.25, True)
