"""gpt-oss's expert math in mlcx's kernels against transformers' GptOssMLP / GptOssExperts on
the same random MXFP4 checkpoint tensors (router with a bias, top-k then softmax, biases on
every expert's rows, gate/up interleaved in the checkpoint, the clamped SwiGLU):

- the MoE graph (tests.support.gpt_oss_moe) through the CPU pipeline: the expert GEMVs become
  mlcx's kernels (the activation and the biases fused), and the layer matches GptOssMLP;
- the same graph through the GPU passes of cuda and webgpu: nothing is left to Fallback;
- the GPU expert kernels on wgpu (lavapipe here) with transformers' routing: GptOssExperts.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend import nn

from mlcx.frontends.nn.linear import QLinear
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.kernels.gpu.config import GpuConfig
from mlcx.kernels.gpu.expert_sort import build_expert_sort, sort_shapes
from mlcx.kernels.gpu.experts import GpuExpertsSpec, build_gpu_experts
from mlcx.kernels.moe_options import GPT_OSS_GLU
from mlcx.passes.gpu.schedule import schedule_rules_of
from mlcx.passes.pipeline_cpu import cpu_pipeline, graph_passes
from mlcx.passes.pipeline_gpu import gpu_config, gpu_graph_passes
from mlcx.quantization.mxfp4 import MXFP4, Mxfp4Format
from tests.support.gpt_oss_moe import (
    GptOssMoE,
    MoEShape,
    mlcx_params,
    random_checkpoint,
    transformers_mlp,
)
from tests.support.wgpu_prim import run_prim_func

SHAPE = MoEShape()
TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})


class _Block(nn.Module):
    """The MoE plus a dense linear in the same format (an MXFP4 GGUF may store any linear so)."""

    def __init__(self, fmt, dtype: str):
        self.moe = GptOssMoE(SHAPE, fmt, dtype=dtype)
        self.proj = QLinear(SHAPE.hidden, SHAPE.hidden, fmt, dtype, bias=False)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return self.moe(x) + self.proj(x)


def _export(fmt, dtype: str = "float32", projection: bool = False):
    module = _Block(fmt, dtype) if projection else GptOssMoE(SHAPE, fmt, dtype=dtype)
    spec = {"forward": {"x": nn.spec.Tensor(["n", SHAPE.hidden], dtype)}}
    return module.export_tvm(spec=spec)


def _kernel_names(mod: tvm.IRModule) -> list[str]:
    return [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)]


@pytest.fixture(scope="module")
def checkpoint():
    return random_checkpoint(SHAPE, seed=11)


# int16 kernels: activations rounded per 32 features before each projection, and the
# activation multiplies gate by up, so two roundings compound (measured: 8e-5 of the largest
# output at 3 tokens, 2.4e-4 at 21); the float kernels keep the TE GEMVs and TE activation.
KERNELS = [(LinearKernels.INT16, 3e-4), (LinearKernels.FLOAT, 1e-5)]


@pytest.mark.parametrize("kernels,tolerance", KERNELS, ids=lambda v: getattr(v, "value", ""))
def test_cpu_graph_matches_gpt_oss_mlp(checkpoint, kernels, tolerance):
    mod, params = _export(Mxfp4Format(tiled=True))
    with TARGET:
        swapped = _kernel_names(tvm.transform.Sequential(graph_passes(TARGET, kernels))(mod))
    fused = [n for n in swapped if n.startswith("cpu_experts_")]
    if kernels is LinearKernels.INT16:  # the activation and biases fused into the kernels
        assert any(n.startswith("cpu_experts_gate_up_bias_mxfp4_t16") for n in fused)
        assert any(n.startswith("cpu_experts_down_swiglu_glu_a1p702_l7_s1_bias_") for n in fused)
        assert "expert_glu" not in swapped
    else:
        assert not fused and {"experts_gate_up", "expert_glu", "experts_down"} <= set(swapped)
    built = tvm.compile(mod, TARGET, relax_pipeline=cpu_pipeline(TARGET, kernels))
    vm = relax.VirtualMachine(built, tvm.cpu())
    values = mlcx_params(checkpoint, Mxfp4Format(tiled=True))
    weights = [tvm.runtime.tensor(values[name]) for name, _ in params]
    mlp = transformers_mlp(SHAPE, checkpoint)
    rng = np.random.default_rng(0)
    for tokens in (1, 3, 21):  # decode, a few rows, a prefill's rows grouped by expert
        x = rng.standard_normal((tokens, SHAPE.hidden)).astype(np.float32)
        got = vm["forward"](tvm.runtime.tensor(x), *weights).numpy()
        with torch.no_grad():
            want = mlp(torch.from_numpy(x)[None])[0][0].numpy().astype(np.float64)
        assert np.abs(got - want).max() <= tolerance * np.abs(want).max(), tokens


GPU_TARGETS = {"cuda": {"kind": "cuda", "arch": "sm_80"}, "webgpu": {"kind": "webgpu"}}


# cuda in f16 (its default for GGUF files: gguf-f16), webgpu in f32 and f16
@pytest.mark.parametrize(
    "target,dtype", [("cuda", "float16"), ("webgpu", "float32"), ("webgpu", "float16")]
)
def test_gpu_graph_leaves_nothing_to_fallback(target, dtype):
    mod, _ = _export(MXFP4, dtype, projection=True)
    tvm_target = tvm.target.Target(GPU_TARGETS[target], host={"kind": "llvm"})
    with tvm_target:
        passes = gpu_graph_passes(tvm_target, dtype, gpu_config(tvm_target))
        rules = schedule_rules_of(tvm.transform.Sequential(passes)(mod))
    assert {n: r for n, r in rules.items() if r in ("", "Fallback")} == {}
    linears = {n: r for n, r in rules.items() if n.startswith("gpu_linear_mxfp4")}
    assert set(linears.values()) == {"mlcx"}  # the projection: GEMV and tiled GEMM
    experts = {n: r for n, r in rules.items() if n.startswith("gpu_experts_")}
    assert any(n.startswith("gpu_experts_gate_up_bias_mxfp4") for n in experts)
    assert any(n.startswith("gpu_experts_down_swiglu_glu_a1p702_l7_s1_bias_mxfp4") for n in experts)
    assert set(experts.values()) == {"mlcx"}
    assert {"topk_ids", "topk_weights"} <= {n for n, r in rules.items() if r == "RouterTopK"}


@pytest.mark.parametrize("tokens", [2, 40])  # the gathered GEMV; rows sorted and grouped
def test_gpu_expert_kernels_match_gpt_oss_experts(adapter, checkpoint, tokens):
    mlp, cfg = transformers_mlp(SHAPE, checkpoint), GpuConfig()
    x = np.random.default_rng(tokens).standard_normal((tokens, SHAPE.hidden)).astype(np.float32)
    with torch.no_grad():
        _, scores, ids = mlp.router(torch.from_numpy(x))
        want = mlp.experts(torch.from_numpy(x), ids, scores).numpy().astype(np.float64)
    ids, scores = ids.numpy().astype(np.int32), scores.numpy()
    params = mlcx_params(checkpoint, MXFP4)
    e, h, w, k = SHAPE.experts, SHAPE.hidden, SHAPE.width, SHAPE.top_k
    gate_up = GpuExpertsSpec(MXFP4, e, k, h, 2 * w, "float32", fused=True, bias=True)
    down = GpuExpertsSpec(
        MXFP4, e, k, w, h, "float32", per_slot=True, swiglu=True, bias=True, glu=GPT_OSS_GLU
    )
    sort = gate_up.sort_spec(cfg)
    outs = [np.full(s, -7, np.int32) for s in sort_shapes(tokens, sort)]
    order, tiles = run_prim_func(build_expert_sort(sort), [ids, ids, *outs])[2:4]

    def run(spec, x, prefix):
        planes = [params[f"{prefix}.{s}"] for s in MXFP4.suffixes]
        out = np.full((tokens, k, spec.out_features), np.nan, np.float32)
        arrays = [x, ids, order, tiles, *planes, params[f"{prefix}_bias"], out]
        return run_prim_func(build_gpu_experts(spec, cfg), arrays)[-1]

    both = run(gate_up, x, "gate_up")
    y = run(down, both, "down")
    got = (y * scores[..., None]).sum(axis=1)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
