"""Tiny GGUFs mixed as llama.cpp's Q2_K and IQ4_XS (Q2_K, Q3_K, IQ4_NL, IQ4_XS beside
Q4_K .. Q6_K; fused weights of two types) through every GPU target: each linear layer, every
part of the stacked ones included, is mlcx's GPU kernel reading the file's blocks, no kernel
is left to dlight's Fallback (the embedding gather reads the blocks too), and `mlcx compile`
builds each target's library."""

from __future__ import annotations

import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.kquant_files import KQUANT_SPEC, LOW_MIXES, write_mix
from tests.targets.test_gpu_rules import _rules_used, _unfit
from tests.targets.test_kquant_targets import GPU_TARGETS, LINEAR_KERNELS, MATRIX_UNITS
from tests.targets.test_qwen3_targets import LIBRARIES

KINDS = {"q2_k": ("q2_k", "q3_k"), "iq4_xs": ("iq4_xs", "iq4_nl")}


@pytest.fixture(scope="module")
def mixed(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("low_targets")
    return {m: write_mix(tiny_model(KQUANT_SPEC), root / f"{m}.gguf", m) for m in LOW_MIXES}


@pytest.mark.parametrize("mix", list(LOW_MIXES))
@pytest.mark.parametrize("target", GPU_TARGETS)
def test_every_linear_is_an_mlcx_kernel_on_the_blocks(mixed, target, mix):
    rules = _rules_used(str(mixed[mix]), target)
    assert _unfit(rules) == {}
    linears = {n: r for n, r in rules.items() if any(tag in n for tag in LINEAR_KERNELS)}
    assert all(rule == "mlcx" for n, rule in linears.items() if n.startswith("gpu_linear"))
    for kind in KINDS[mix]:
        assert any(kind in name for name in linears), kind
    assert all("tc_matmul" in name for name in rules if "matmul" in name)  # no TE linear left
    if target in MATRIX_UNITS:  # prefill's linears: the tensor-core GEMM over each kind
        for kind in KINDS[mix]:
            assert any("tc_matmul" in name and kind in name for name in linears), kind


@pytest.mark.parametrize("target", sorted(LIBRARIES))
def test_compile_builds_the_target_library(mixed, tmp_path, target):
    artifact = compile_model(CompileRequest(str(mixed["iq4_xs"]), target, output=tmp_path / target))
    for name in LIBRARIES[target]:
        assert (artifact / name).stat().st_size > 0, name
