"""The tiny mixtures of experts through the GPU targets: no kernel of any family is left to
dlight's Fallback (the expert GEMVs and the router's top-k have their own rules), and the
target libraries build (the webgpu plan, which vulkan runs too, in tests/webgpu/test_moe_wgpu.py).
"""

from __future__ import annotations

import pytest

from mlcx.targets.registry import get_target
from mlcx.targets.webgpu import WebGPUTarget
from tests.targets.test_gpu_rules import _rules_used, _unfit

MOE_KERNELS = {"ExpertGEMV", "RouterTopK"}


# every family on some target, each target's dtype choices; the kernels differ by family
# (OLMoE's q/k norm over all heads, Qwen3's per head, Mixtral's none), not by target
@pytest.mark.parametrize(
    "arch,target,quantization",
    [
        ("qwen3_moe", "cuda", "q4f16"),
        ("mixtral", "metal", "q4f16"),
        ("olmoe", "webgpu", "q0f32"),
        ("olmoe", "android", "q4f16"),
        ("mixtral", "webgpu", "q4f32"),
    ],
)
def test_no_kernel_falls_back(moe_model, arch, target, quantization):
    rules = _rules_used(str(moe_model(arch)), target, quantization)
    assert _unfit(rules) == {}
    assert set(rules.values()) >= MOE_KERNELS


@pytest.mark.parametrize("target", ["android"])
def test_compile_builds_the_target_library(moe_compiled, target):
    artifact = moe_compiled("mixtral", "q4f16", target)
    for name in ("model-android.a", "model-android.so"):
        assert (artifact / name).stat().st_size > 0, name


def test_vulkan_builds_the_webgpu_plan():
    assert isinstance(get_target("vulkan"), WebGPUTarget)
