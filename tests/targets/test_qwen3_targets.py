"""A tiny Qwen3 through every GPU target: `mlcx compile` builds each library, the q/k norms
are fused into the RoPE + KV append kernel, and no kernel is left to dlight's Fallback."""

from __future__ import annotations

import pytest

from tests.support.cli import compile_here
from tests.support.tiny_models import TinySpec
from tests.targets.test_gpu_rules import _rules_used, _unfit

SPEC = TinySpec(arch="qwen3", kv_heads=2, seed=34, extra={"head_dim": 32})
# target -> the files its artifact must hold besides the weights
LIBRARIES = {
    "cuda": ("model-cuda.so",),
    "metal": ("model-metal.dylib",),
    "iphone": ("model-iphone.a",),
    "android": ("model-android.a", "model-android.so"),
}


@pytest.mark.parametrize("target", sorted(LIBRARIES))
def test_compile_builds_the_target_library(compiled, target):
    artifact = compiled(SPEC, "q4f16", target=target)
    for name in LIBRARIES[target]:
        assert (artifact / name).stat().st_size > 0, name


def test_mlcx_compile_for_webgpu(tiny_model, tmp_path):
    out = tmp_path / "webgpu"
    args = ("--target", "webgpu", "--quantization", "q4f16", "-o", str(out))
    result = compile_here(str(tiny_model(SPEC)), *args)
    assert result.returncode == 0, result.stderr
    assert (out / "webgpu-plan.json").exists()


@pytest.mark.parametrize("target", ["cuda", "webgpu", "android"])
@pytest.mark.parametrize("quantization", ["q4f16", "q0f32"])
def test_norms_fuse_and_no_kernel_falls_back(tiny_model, target, quantization):
    rules = _rules_used(str(tiny_model(SPEC)), target, quantization)
    assert _unfit(rules) == {}
    assert rules.get("rope_append_gpu") == "mlcx"
    assert not any(name.startswith("rope") and name != "rope_append_gpu" for name in rules)
