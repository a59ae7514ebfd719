"""Tiny Phi-3 (LongRoPE, sliding window) and Gemma 3 (local and global layers, GeGLU) through
every target: `mlcx compile` builds each library (q4f16 on GPU targets, q4f32 on cpu) and
webgpu's plan; no attention or RoPE kernel is left to dlight's Fallback."""

from __future__ import annotations

import pytest

from tests.support.cli import compile_here
from tests.support.tiny_models import GEMMA3_LOCAL_GLOBAL, TinySpec
from tests.targets.test_gpu_rules import _rules_used

SPECS = {
    "phi3": TinySpec(
        arch="phi3",
        kv_heads=2,
        seed=81,
        extra={
            "sliding_window": 16,
            "original_max_position_embeddings": 64,
            "rope_parameters": {
                "rope_type": "longrope",
                "rope_theta": 10000.0,
                "short_factor": [1.0] * 8,
                "long_factor": [2.0] * 8,
            },
        },
    ),
    "gemma3": TinySpec(
        arch="gemma3",
        kv_heads=2,
        seed=82,
        tie=True,
        extra=GEMMA3_LOCAL_GLOBAL,
    ),
}
LIBRARIES = {
    "cpu": ("q4f32", "model-cpu.so"),
    "cuda": ("q4f16", "model-cuda.so"),
    "metal": ("q4f16", "model-metal.dylib"),
    "iphone": ("q4f16", "model-iphone.a"),
    "android": ("q4f16", "model-android.so"),
}


@pytest.mark.parametrize("target", sorted(LIBRARIES))
@pytest.mark.parametrize("arch", sorted(SPECS))
def test_compile_builds_the_target_library(compiled, arch, target):
    quantization, library = LIBRARIES[target]
    artifact = compiled(SPECS[arch], quantization, target=target)
    assert (artifact / library).stat().st_size > 0


@pytest.mark.parametrize("arch", sorted(SPECS))
def test_mlcx_compile_for_webgpu(tiny_model, tmp_path, arch):
    out = tmp_path / "webgpu"
    args = ("--target", "webgpu", "--quantization", "q4f16", "-o", str(out))
    result = compile_here(str(tiny_model(SPECS[arch])), *args)
    assert result.returncode == 0, result.stderr
    assert (out / "webgpu-plan.json").exists()


@pytest.mark.parametrize("arch", sorted(SPECS))
def test_attention_and_rope_kernels_are_mlcx_own(tiny_model, arch):
    rules = _rules_used(str(tiny_model(SPECS[arch])), "webgpu", "q4f16")
    assert rules.get("rope_append_gpu") == "mlcx"
    fallback = {name for name, rule in rules.items() if rule == "Fallback"}
    assert not any("attention" in name or "rope" in name for name in fallback)
