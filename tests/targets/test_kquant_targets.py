"""A Q4_K_M-style tiny GGUF (Q4_K, Q6_K, Q5_0, Q5_1, Q8_0; a q/k/v of two formats) through
every GPU target: each linear layer, every part of the stacked ones included, is mlcx's GPU
kernel reading the file's blocks, no kernel is left to dlight's Fallback, and `mlcx compile`
builds each target's library."""

from __future__ import annotations

import pytest

from mlcx.compile import CompileRequest, compile_model
from tests.support.kquant_files import KQUANT_SPEC, write_mix
from tests.targets.test_gpu_rules import _rules_used, _unfit
from tests.targets.test_qwen3_targets import LIBRARIES

GPU_TARGETS = ["cuda", "metal", "webgpu", "vulkan", "iphone", "android"]


@pytest.fixture(scope="module")
def q4_k_m(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("kquant_targets")
    return write_mix(tiny_model(KQUANT_SPEC), root / "q4_k_m.gguf", "q4_k_m")


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_every_linear_is_an_mlcx_kernel_on_the_blocks(q4_k_m, target):
    rules = _rules_used(str(q4_k_m), target)
    assert _unfit(rules) == {}
    linears = {name: rule for name, rule in rules.items() if name.startswith("gpu_linear")}
    assert all(rule == "mlcx" for rule in linears.values())
    for kind in ("q4_k", "q6_k", "q5_0", "q5_1"):
        assert any(kind in name for name in linears), kind
    assert not [name for name in rules if "matmul" in name]  # no TE linear left


@pytest.mark.parametrize("target", sorted(LIBRARIES))
def test_compile_builds_the_target_library(q4_k_m, tmp_path, target):
    artifact = compile_model(CompileRequest(str(q4_k_m), target, output=tmp_path / target))
    for name in LIBRARIES[target]:
        assert (artifact / name).stat().st_size > 0, name
