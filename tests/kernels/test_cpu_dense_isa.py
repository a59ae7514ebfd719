"""The dense attention kernel of image encoders cross-compiled for CPUs this machine may not
have, read back as assembly: its int16 scores and value sums are `vpdpwssd` (32 multiplies an
instruction) on AVX512-VNNI parts, on whole 512-bit registers at head_dim 72 (but the last 8
features), and `vpmaddwd` on AVX2. Targets are built as the cpu target builds them
(mlcx.targets.cpu.llvm_target)."""

from __future__ import annotations

import re

import pytest

from mlcx.kernels.cpu.dense_attention import DenseShape, dense_attention_cpu
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.targets.cpu import llvm_target
from tests.support.kernel_cache import cpu_asm


def _asm(mcpu: str) -> tuple[str, KernelConfig]:
    target = llvm_target(mcpu, 2, "x86_64-linux-gnu")
    cfg = KernelConfig.for_target(target)
    shape = DenseShape(2, 256, 72, 72**-0.5, int16_scores=cfg.int16_pairs)
    return cpu_asm(dense_attention_cpu(shape), target), cfg


def _count(asm: str, pattern: str) -> int:
    return len(re.findall(pattern, asm))


@pytest.mark.parametrize("mcpu", ["sapphirerapids", "znver4"])
def test_avx512_vnni_cpus_sum_scores_with_vpdpwssd(mcpu):
    asm, cfg = _asm(mcpu)
    assert cfg.int16_pairs
    assert _count(asm, r"\bvpdpwssd\s+%zmm") >= 16 + 16  # 8 rows x 2 key tiles; 4 rows x 4
    assert _count(asm, r"\bvfmadd231ps\s+%zmm\d+, %zmm") < 8  # only the exp's


def test_avx2_cpus_sum_scores_with_vpmaddwd():
    asm, cfg = _asm("haswell")
    assert cfg.int16_pairs
    assert _count(asm, r"%zmm\d+") == 0 and _count(asm, r"\bvpmaddwd\b") > 0


def test_cpus_without_pair_dot_products_keep_float_scores():
    assert not KernelConfig.for_target(llvm_target("x86-64", 2, "x86_64-linux-gnu")).int16_pairs
