"""The tiny Gemma 4 with every switch on (tests/support/tiny_gemma4.py) through the GPU
schedules of cuda, metal, webgpu and android (iphone is metal's kind, vulkan runs the webgpu
plan): no kernel is left to dlight's Fallback, though its layers differ in head geometry (two
KV page layouts), some project only queries (KV-shared layers) or take their keys as values (so
RoPE and the KV append are not fused there), values are RMS-normed, each layer gates in a
per-layer input, and experts run beside the dense MLP.
"""

from __future__ import annotations

import pytest

from tests.targets.test_gpu_rules import _rules_used, _unfit
from tests.targets.test_moe_targets import EXPERT_KERNELS, _expert_kernels

TARGETS = ["cuda", "metal", "webgpu", "android"]


@pytest.mark.parametrize("target", TARGETS)
def test_no_kernel_falls_back(gemma4_model, target):
    rules = _rules_used(str(gemma4_model("everything")), target, "q4f16")
    assert _unfit(rules) == {}
    experts = _expert_kernels(rules)
    assert all(any(n.startswith(k) for n in experts) for k in EXPERT_KERNELS[:2])
    assert set(experts.values()) == {"mlcx"}


def test_dense_no_kernel_falls_back(gemma4_model):
    assert _unfit(_rules_used(str(gemma4_model("dense")), "webgpu", "q4f16")) == {}
