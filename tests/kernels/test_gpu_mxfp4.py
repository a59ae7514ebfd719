"""mlcx's GPU kernels on MXFP4 (the dequant GEMV, the tiled GEMM, the gathered and grouped
expert linears with gpt-oss's biases and clamped SwiGLU), run on this machine's wgpu adapter
(lavapipe here) through the WebGPU plan's lowering (the uint8 exponents read through 32-bit
words), against numpy on the weights `gguf` dequantizes the same blocks to."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT
from gguf.quants import dequantize

from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.expert_sort import build_expert_sort, sort_shapes
from mlcx.kernels.gpu.experts import GpuExpertsSpec, build_gpu_experts
from mlcx.kernels.gpu.linear import GpuLinearSpec, build_gpu_linear
from mlcx.kernels.moe_options import GPT_OSS_GLU, SILU
from mlcx.quantization import mxfp4_blocks as mb
from mlcx.quantization.mxfp4 import MXFP4
from tests.support.moe_reference import experts_numpy, glu_numpy
from tests.support.mxfp4_reference import random_ggml, realistic_exponents
from tests.support.wgpu_prim import run_prim_func

EXPERTS, SLOTS = 6, 2


def mxfp4_weight(n: int, k: int, seed: int):
    raw = random_ggml(n, k, seed, realistic_exponents((n, k // 32), seed + 1))
    return mb.from_ggml(raw), dequantize(raw, GT.MXFP4).reshape(n, k).astype(np.float64)


def _tolerance(want, k: int) -> float:
    return 1e-5 * np.abs(want).max() * np.sqrt(k)


LINEAR_CASES = [  # tokens (up to 4: the GEMV; more: the tiled GEMM), input, subgroup shuffles
    (1, "plain", True),
    (3, "residual", False),
    (19, "swiglu", True),
    (33, "plain", False),
]


@pytest.mark.parametrize("tokens,extra,subgroups", LINEAR_CASES)
def test_linear_matches_gguf_weights(adapter, tokens, extra, subgroups):
    k, n = 256, 40
    rng = np.random.default_rng(tokens)
    params, weight = mxfp4_weight(n, k, seed=tokens)
    swiglu, residual = extra == "swiglu", extra == "residual"
    x = rng.standard_normal((tokens, 2 * k if swiglu else k)).astype(np.float32)
    res = rng.standard_normal((tokens, n)).astype(np.float32)
    poisoned = np.full((tokens, n), np.nan, np.float32)  # every element must be written
    func = build_gpu_linear(
        GpuLinearSpec(MXFP4, k, n, "float32", residual, swiglu), GpuConfig(subgroups=subgroups)
    )
    arrays = [x, *(params[s] for s in MXFP4.suffixes), *([res] if residual else []), poisoned]
    out = run_prim_func(func, arrays)[-1]
    rows = glu_numpy(x, SILU) if swiglu else x.astype(np.float64)
    want = rows @ weight.T + (res if residual else 0)
    assert np.abs(out - want).max() <= _tolerance(want, k)


def _routing(tokens: int, rng) -> np.ndarray:
    """Distinct experts per token, expert 5 never, expert 0 in over a tile's rows."""
    probs = np.array([0.45, 0.2, 0.15, 0.1, 0.1, 0.0])
    return np.stack([rng.choice(EXPERTS, SLOTS, replace=False, p=probs) for _ in range(tokens)])


# kind, tokens (2: the gathered GEMV; 90: sorted and grouped, an expert over a tile); the
# other two pairings run in tests/kernels/test_gpt_oss_experts.py
EXPERT_CASES = [("gate_up", 2), ("down_gpt_oss", 90)]


@pytest.mark.parametrize("kind,tokens", EXPERT_CASES)
def test_experts_with_biases_and_clamped_swiglu(adapter, kind, tokens):
    cfg, rng = GpuConfig(), np.random.default_rng(tokens)
    k, n, down = 64, 48, kind != "gate_up"
    spec = GpuExpertsSpec(
        MXFP4, EXPERTS, SLOTS, k, n, "float32", per_slot=down, fused=not down,
        swiglu=down, bias=True, glu=GPT_OSS_GLU if down else SILU,
    )  # fmt: skip
    params, weight = mxfp4_weight(spec.weight_rows, k, seed=tokens)
    bias = rng.standard_normal(spec.weight_rows).astype(np.float32)
    ids = _routing(tokens, rng).astype(np.int32)
    shape = (tokens, SLOTS, spec.x_features) if down else (tokens, k)
    x = (rng.standard_normal(shape) * (4.0 if down else 1.0)).astype(np.float32)
    sort = spec.sort_spec(cfg)
    outs = [np.full(s, -7, np.int32) for s in sort_shapes(tokens, sort)]
    order, tile_expert = run_prim_func(build_expert_sort(sort), [ids, ids, *outs])[2:4]
    out = np.full((tokens, SLOTS, n), np.nan, np.float32)
    planes = [params[s] for s in MXFP4.suffixes]
    arrays = [x, ids, order, tile_expert, *planes, bias, out]
    got = run_prim_func(build_gpu_experts(spec, cfg), arrays)[-1]
    rows = glu_numpy(x, GPT_OSS_GLU) if down else x
    want = experts_numpy(rows, ids, weight, EXPERTS, n, spec.fused, down, bias.astype(np.float64))
    assert np.abs(got - want).max() <= _tolerance(want, k)


def test_cuda_source_compiles_with_nvcc():
    """The kernels' CUDA source (f16 activations, gpt-oss's down projection) through nvcc for
    sm_90, as `mlcx compile --target cuda` builds a library ahead of time."""
    import tvm

    from mlcx.kernels.gpu.config import gpu_config
    from mlcx.passes import tir_pipeline
    from mlcx.targets.cuda_kernels import compile_fatbin
    from mlcx.targets.toolchain import which

    if which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"}, host={"kind": "llvm"})
    cfg = gpu_config(target)
    down = GpuExpertsSpec(
        MXFP4, 8, 2, 64, 128, "float16", per_slot=True, swiglu=True, bias=True, glu=GPT_OSS_GLU
    )
    linear = GpuLinearSpec(MXFP4, 256, 64, "float16")
    funcs = {down.name: build_gpu_experts(down, cfg), linear.name: build_gpu_linear(linear, cfg)}
    built = tvm.compile(tvm.IRModule(funcs), target, tir_pipeline=tir_pipeline.NAME)
    source = built.mod.imports[0].inspect_source("cuda")
    assert all(name in source for name in funcs)
    assert len(compile_fatbin(source, "sm_90")) > 0
