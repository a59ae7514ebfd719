"""A Q4_K_M-style tiny GGUF (Q4_K, Q6_K, Q5_0, Q5_1, Q8_0; a q/k/v of two formats) through
every GPU target: each linear layer, every part of the stacked ones included, is mlcx's GPU
kernel reading the file's blocks, no kernel is left to dlight's Fallback, and `mlcx compile`
builds each target's library."""

from __future__ import annotations

import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.kquant_files import KQUANT_SPEC, write_mix
from tests.targets.test_gpu_rules import _rules_used, _unfit
from tests.targets.test_qwen3_targets import LIBRARIES

# a target per kernel family (vulkan schedules as webgpu, iphone as metal; libraries: below)
GPU_TARGETS = ["cuda", "metal", "webgpu", "android"]
MATRIX_UNITS = ("cuda", "metal")
LINEAR_KERNELS = ("gpu_linear", "tc_matmul", "gemv_dq")


@pytest.fixture(scope="module")
def q4_k_m(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("kquant_targets")
    return write_mix(tiny_model(KQUANT_SPEC), root / "q4_k_m.gguf", "q4_k_m")


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_every_linear_is_an_mlcx_kernel_on_the_blocks(q4_k_m, target):
    rules = _rules_used(str(q4_k_m), target)
    assert _unfit(rules) == {}
    # mlcx's GEMV/tiled GEMM everywhere; on matrix-unit targets (cuda, metal) prefill's are the
    # tensor-core GEMM and cuda's decode dlight's LowBatchGEMV, both over the blocks
    linears = {n: r for n, r in rules.items() if any(tag in n for tag in LINEAR_KERNELS)}
    assert all(rule == "mlcx" for n, rule in linears.items() if n.startswith("gpu_linear"))
    for kind in ("q4_k", "q6_k", "q5_0", "q5_1"):
        assert any(kind in name for name in linears), kind
    assert all("tc_matmul" in name for name in rules if "matmul" in name)  # no TE linear left
    if target in MATRIX_UNITS:
        assert any("tc_matmul_swiglu_q4_k" in name for name in linears)


@pytest.mark.parametrize("target", sorted(LIBRARIES))
def test_compile_builds_the_target_library(q4_k_m, tmp_path, target):
    artifact = compile_model(CompileRequest(str(q4_k_m), target, output=tmp_path / target))
    for name in LIBRARIES[target]:
        assert (artifact / name).stat().st_size > 0, name
