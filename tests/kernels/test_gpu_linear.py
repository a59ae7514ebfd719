"""mlcx's GPU linear kernels against numpy, run on this machine's wgpu adapter (lavapipe here).

Each case packs a random matrix into its weight format, unpacks it again with numpy (the
reference sees exactly the stored weights), and compares x @ W.T (+ residual). Token counts
cover the GEMV path (1, 3) and the GEMM path with whole and partial tiles; row counts that no
tile divides check the edge masking; both ways of sharing activations run.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from mlcx.kernels.gpu.config import GpuConfig, gpu_config
from mlcx.kernels.gpu.linear import GpuLinearSpec, build_gpu_linear, k_splits
from mlcx.quantization.formats import DenseFormat, GroupIntFormat
from tests.support.wgpu_prim import run_prim_func

Q4_AFFINE = GroupIntFormat(4, 32, "float16", affine=True)  # GGUF Q4_1
Q4_SYM = GroupIntFormat(4, 32, "float16")  # q4f32 / GGUF Q4_0
Q8 = GroupIntFormat(8, 32, "float16")  # q8f32 / GGUF Q8_0
CASES = [
    (Q4_AFFINE, 200, 576, 1, False),
    (Q4_AFFINE, 64, 192, 2, "swiglu"),
    (Q4_AFFINE, 64, 192, 33, "swiglu"),
    (Q4_AFFINE, 200, 576, 70, True),
    (Q4_SYM, 96, 1536, 3, True),
    (Q4_SYM, 96, 256, 9, False),
    (Q8, 136, 576, 1, False),
    (Q8, 136, 576, 65, False),
    (GroupIntFormat(4, 64, "float32"), 40, 128, 5, False),
    (DenseFormat("float32"), 72, 64, 1, True),
    (DenseFormat("float32"), 72, 64, 17, False),
]


def _case_id(case) -> str:
    fmt, n, k, tokens, residual = case
    return f"{fmt.name}-{n}x{k}-t{tokens}" + (f"-{residual}" if residual else "")


@pytest.mark.parametrize("subgroups", [True, False], ids=["shuffles", "no-shuffles"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_linear_matches_numpy(adapter, case, subgroups):
    _check_linear(case, GpuConfig(subgroups=subgroups))


GEMM_CASES = [c for c in CASES if c[3] > GpuConfig().gemv_max_tokens]


@pytest.mark.parametrize("case", GEMM_CASES, ids=[_case_id(c) for c in GEMM_CASES])
def test_webgpu_s_own_gemm_tile_matches_numpy(adapter, case):
    """The config WebGPU artifacts are compiled with (its own GEMM tile), partial tiles too."""
    config = gpu_config(tvm.target.Target({"kind": "webgpu"}))
    assert config.gemm_tokens != GpuConfig().gemm_tokens  # else the test above covers it
    _check_linear(case, config)


def _check_linear(case, config: GpuConfig) -> None:
    fmt, n, k, tokens, residual = case
    rng = np.random.default_rng(n * k + tokens)
    params = fmt.pack(rng.standard_normal((n, k)).astype(np.float32))
    weight = fmt.unpack(params)
    swiglu = residual == "swiglu"  # the SwiGLU prologue instead of a residual here
    residual = residual is True
    x = rng.standard_normal((tokens, 2 * k if swiglu else k)).astype(np.float32)
    res = rng.standard_normal((tokens, n)).astype(np.float32)
    poisoned = np.full((tokens, n), np.nan, np.float32)  # every element must be written
    spec = GpuLinearSpec(fmt, k, n, "float32", residual, swiglu)
    func = build_gpu_linear(spec, config)
    planes = [_as_read(params[s]) for s in fmt.suffixes]
    arrays = [x, *planes, *([res] if residual else []), poisoned]
    out = run_prim_func(func, arrays)[-1]
    if swiglu:
        gate, up = x[:, :k].astype(np.float64), x[:, k:].astype(np.float64)
        x = gate / (1 + np.exp(-gate)) * up
    expected = x.astype(np.float64) @ weight.T.astype(np.float64) + (res if residual else 0)
    scale = np.abs(expected).max()
    assert np.abs(out - expected).max() <= 1e-5 * scale * np.sqrt(k)


def _as_read(plane: np.ndarray) -> np.ndarray:
    """8-bit codes go to the kernel as uint32 words (the graph passes a view)."""
    return plane.view(np.uint32) if plane.dtype == np.int8 else plane


def test_gemv_splits_take_whole_groups():
    assert k_splits(18, 8) == 6  # SmolLM2's 576 features: 18 groups of 32
    assert k_splits(48, 8) == 8
    assert k_splits(7, 8) == 7
    assert k_splits(13, 8) == 1


def test_the_config_refuses_lanes_that_groups_of_four_cannot_share():
    with pytest.raises(ValueError, match="multiple of 4"):
        GpuConfig(lanes=6)
