"""The tiny mixtures of experts through every GPU target: no kernel of any family is left to
dlight's Fallback (the experts are mlcx's kernels: the sort by expert, the gathered GEMV /
grouped GEMM; the router's top-k has its own rule), and each target library builds with the
expert kernels in it. The webgpu plan, which vulkan runs too, is built and run in
tests/webgpu/test_moe_wgpu.py.
"""

from __future__ import annotations

import pytest

from mlcx.targets.registry import get_target
from mlcx.targets.webgpu import WebGPUTarget
from tests.targets.test_gpu_rules import _rules_used, _unfit

ARCHS = ["qwen3_moe", "mixtral", "olmoe"]
# every family on webgpu (the browsers' and vulkan's kernels) and cuda (f16, tensor cores);
# metal, iphone and android build one family's library each below, with the same rules
TARGETS = ["cuda", "webgpu"]
EXPERT_KERNELS = ("gpu_expert_sort_", "gpu_experts_gate_up_", "gpu_experts_down_swiglu_")


def _expert_kernels(rules: dict[str, str]) -> dict[str, str]:
    return {name: rule for name, rule in rules.items() if name.startswith(EXPERT_KERNELS)}


# the kernels differ by family (OLMoE's q/k norm over all heads, Qwen3's per head, Mixtral's
# none, the expert widths) and by target (shuffles, tensor cores, f16)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("arch", ARCHS)
def test_no_kernel_falls_back(moe_model, arch, target):
    rules = _rules_used(str(moe_model(arch)), target, "q4f16")
    assert _unfit(rules) == {}
    experts = _expert_kernels(rules)
    assert all(any(n.startswith(k) for n in experts) for k in EXPERT_KERNELS)
    assert set(experts.values()) == {"mlcx"}
    assert {"topk_ids", "topk_weights"} <= {n for n, r in rules.items() if r == "RouterTopK"}


def test_mixed_expert_stacks_keep_the_gathered_gemv(moe_model, tmp_path):
    """A GGUF's Q4_0 gate with Q8_0 up is a stack of two formats, which the GPU linear kernels
    do not read: that projection stays the TE GEMV under its own rule, the down projection
    (Q8_0) is mlcx's kernel."""
    from tests.support.tiny_moe import QUANT_TYPES, write_moe_gguf

    path = write_moe_gguf(moe_model("olmoe"), tmp_path / "q.gguf", QUANT_TYPES)
    rules = _rules_used(str(path), "webgpu", "gguf")
    assert _unfit(rules) == {}
    assert "ExpertGEMV" in rules.values()
    assert any(n.startswith("gpu_experts_down_") for n in rules)


# one family per target library (the schedules above cover all three everywhere)
@pytest.mark.parametrize(
    "arch,target,library",
    [
        ("qwen3_moe", "cuda", "model-cuda.so"),
        ("mixtral", "metal", "model-metal.dylib"),
        ("olmoe", "iphone", "model-iphone.a"),
        ("mixtral", "android", "model-android.so"),
    ],
)
def test_compile_builds_the_target_library(moe_compiled, arch, target, library):
    data = (moe_compiled(arch, "q4f16", target) / library).read_bytes()
    for kernel in EXPERT_KERNELS:
        assert kernel.encode() in data, kernel


def test_vulkan_builds_the_webgpu_plan():
    assert isinstance(get_target("vulkan"), WebGPUTarget)
