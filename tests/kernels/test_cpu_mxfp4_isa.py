"""The MXFP4 CPU kernels (a dense linear and a gpt-oss down projection over experts)
cross-compiled for CPUs this machine may not have, read back as assembly: the E2M1 codes are
looked up by each ISA's byte shuffle (vpshufb on zmm / ymm, tbl on NEON) and multiplied by its
integer dot products (vpdpwssd and, for long int8 steps, vpdpbusd on AVX-512 VNNI; vpmaddwd on
AVX2; widening multiplies on NEON)."""

from __future__ import annotations

import functools
import re

import pytest
import tvm

from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.qexperts import ExpertSpec, build_expert_linear
from mlcx.kernels.cpu.rows import PlainRows
from mlcx.kernels.moe_options import GPT_OSS_GLU
from mlcx.quantization.mxfp4 import Mxfp4Format
from tests.support.kernel_cache import cpu_asm

FMT = Mxfp4Format(tiled=True)
CPUS = {
    "sapphirerapids": ("x86_64-linux-gnu", LinearKernels.INT8),
    "znver3": ("x86_64-linux-gnu", LinearKernels.INT16),
    "neoverse-n1": ("aarch64-linux-gnu", LinearKernels.INT16),
}


@functools.cache
def _asm(mcpu: str) -> str:
    mtriple, kernels = CPUS[mcpu]
    target = tvm.target.Target({"kind": "llvm", "mtriple": mtriple, "mcpu": mcpu, "num-cores": 2})
    cfg = KernelConfig.for_target(target, kernels)
    linear = build_linear(LinearSpec(PlainRows(576), FMT, 96), cfg)
    spec = ExpertSpec(FMT, 8, 2, 64, 96, per_slot=True, swiglu=True, bias=True, glu=GPT_OSS_GLU)
    return cpu_asm(linear, target) + cpu_asm(build_expert_linear(spec, cfg), target)


def _count(asm: str, pattern: str) -> int:
    return len(re.findall(pattern, asm))


def test_avx512_vnni_shuffles_zmm_and_takes_both_dot_products():
    asm = _asm("sapphirerapids")
    assert _count(asm, r"\bvpshufb\s+%zmm") > 0  # 64 codes looked up a shuffle
    assert _count(asm, r"\bvpdpwssd\b") > 0  # int16 steps (decode)
    assert _count(asm, r"\bvpdpbusd\b") > 0  # int8 steps of more than 16 tokens


def test_avx2_znver3_stays_in_ymm():
    asm = _asm("znver3")
    assert _count(asm, r"%zmm\d+") == 0 and _count(asm, r"\bvpdpwssd\b") == 0
    assert _count(asm, r"\bvpshufb\s+%ymm") > 0
    assert _count(asm, r"\bvpmaddwd\b") > 0


@pytest.mark.parametrize("mcpu", ["neoverse-n1"])
def test_arm64_compiles_to_tbl_and_widening_multiplies(mcpu):
    asm = _asm(mcpu)
    assert _count(asm, r"\btbl\b") > 0  # NEON's byte table lookup
    assert _count(asm, r"\bsmull2?\b") > 0
    assert _count(asm, r"%[xy]mm") == 0
