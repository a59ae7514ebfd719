"""The int16 linear kernels cross-compiled for CPUs this machine may not have, read back as the
assembly LLVM emits: each ISA gets its own instructions (512-bit registers and VNNI
`vpdpwssd` on AVX-512 VNNI parts, `vpmaddwd` on 256-bit AVX2, widening multiplies on NEON).
Targets are built as the cpu target builds them (mlcx.targets.cpu.llvm_target)."""

from __future__ import annotations

import re

import pytest
import tvm

from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows
from mlcx.quantization.formats import format_from_name
from mlcx.targets.cpu import llvm_target
from tests.support.kernel_cache import cpu_asm

# The row-tiled layout (what CPU artifacts store) and the row-major one (older artifacts); the
# K-quants (Q4_K: sub-block scales per 32; Q6_K: 6-bit codes, scales per 16) and Q5_0.
FORMATS = [
    "int4-affine-g32-float16-t16",
    "int4-affine-g32-float16",
    "q4_k-t16",
    "q6_k-t16",
    "q5_0-t16",
]


def _asm(mtriple: str, mcpu: str, fmt: str, kernels=LinearKernels.INT16) -> str:
    target = llvm_target(mcpu, 2, mtriple)
    k = 512 if fmt.startswith("q") else 576  # K-quant super-blocks hold 256 weights
    spec = LinearSpec(PlainRows(k), format_from_name(fmt), 96, False)
    func = build_linear(spec, KernelConfig.for_target(target, kernels))
    return cpu_asm(func, target)


def _count(asm: str, pattern: str) -> int:
    return len(re.findall(pattern, asm))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mcpu", ["sapphirerapids", "znver4"])
def test_avx512_vnni_cpus_get_zmm_registers_and_vpdpwssd(mcpu, fmt):
    asm = _asm("x86_64-linux-gnu", mcpu, fmt)
    assert _count(asm, r"%zmm\d+") > 0
    assert _count(asm, r"\bvpdpwssd\b") > 0  # int16 pairs summed into int32 in one instruction
    # The row-tiled kernels' sums are not split into vpmaddwd + vpaddd, as LLVM's machine
    # combiner splits them untuned (then vpmaddwd outnumbers vpdpwssd 8 to 1); a vpmaddwd may
    # still start a chain from zero.
    if fmt.endswith("-t16"):
        assert _count(asm, r"\bvpmaddwd\b") * 8 < _count(asm, r"\bvpdpwssd\b")


@pytest.mark.parametrize("fmt", FORMATS)
def test_avx2_cpus_stay_in_ymm_registers_with_vpmaddwd(fmt):
    asm = _asm("x86_64-linux-gnu", "haswell", fmt)
    assert _count(asm, r"%zmm\d+") == 0 and _count(asm, r"\bvpdpwssd\b") == 0
    assert _count(asm, r"%ymm\d+") > 0 and _count(asm, r"\bvpmaddwd\b") > 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_arm64_gets_neon_widening_multiplies(fmt):
    asm = _asm("aarch64-linux-gnu", "neoverse-n1", fmt)
    assert _count(asm, r"\bsmull2?\b") > 0  # int16 x int16 -> int32, NEON
    assert _count(asm, r"%[xy]mm") == 0


@pytest.mark.parametrize("mcpu", ["sapphirerapids", "znver4"])
def test_int8_kernels_get_vpdpbusd_for_long_steps_and_keep_vpdpwssd_for_decode(mcpu):
    asm = _asm("x86_64-linux-gnu", mcpu, "int4-sym-g32-float16-t16", LinearKernels.INT8)
    assert _count(asm, r"\bvpdpbusd\b") > 0  # u8 weight codes x s8 activations, 4 a lane
    assert _count(asm, r"\bvpdpwssd\b") > 0  # steps of up to 16 tokens stay int16


def _float_asm(mtriple: str, mcpu: str) -> str:
    """The float kernel at a ragged shape (the image encoder's: 588 features, 4305 rows)."""
    target = tvm.target.Target({"kind": "llvm", "mtriple": mtriple, "mcpu": mcpu, "num-cores": 2})
    spec = LinearSpec(PlainRows(588), format_from_name("float32"), 4305, False)
    func = build_linear(spec, KernelConfig.for_target(target))
    return cpu_asm(func, target)


@pytest.mark.parametrize(
    "mcpu, register", [("sapphirerapids", r"%zmm\d+"), ("haswell", r"%ymm\d+")]
)
def test_float_kernels_fuse_multiply_adds_at_the_widest_register(mcpu, register):
    asm = _float_asm("x86_64-linux-gnu", mcpu)
    fma = re.findall(r"\bvfmadd\d+ps\s+(%[xyz]mm\d+)", asm)
    assert any(re.fullmatch(register, operand) for operand in fma)
    if mcpu == "haswell":
        assert _count(asm, r"%zmm\d+") == 0


def test_float_kernels_on_arm64_use_neon_fmla():
    assert _count(_float_asm("aarch64-linux-gnu", "neoverse-n1"), r"\bfmla\b") > 0
