"""The CPU state kernels cross-compiled for CPUs this machine may not have, read back as the
assembly LLVM emits, at Qwen3.5's head size (128): each ISA does the math in its own widest
vector FMAs (512-bit zmm on AVX-512, 256-bit ymm on AVX2-only znver3, 128-bit NEON fmla on
arm64), as StateOps builds them for the target."""

from __future__ import annotations

import re

import pytest
import tvm

from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.kernels.hybrid.conv_cpu import conv_cpu
from mlcx.kernels.hybrid.delta_cpu_decode import delta_decode_cpu
from mlcx.kernels.hybrid.delta_cpu_prefill import delta_prefill_cpu
from mlcx.kernels.hybrid.shapes import ConvShape, DeltaShape
from tests.support.kernel_cache import cpu_asm

CPUS = {
    "avx512": ("x86_64-linux-gnu", "sapphirerapids"),
    "avx2": ("x86_64-linux-gnu", "znver3"),
    "neon": ("aarch64-linux-gnu", "neoverse-n1"),
}
DELTA = DeltaShape(16, 16, 128, 128)
KERNELS = {
    "conv": lambda cfg: conv_cpu(ConvShape(DELTA.width, 4, activation="silu"), cfg.lanes),
    "prefill": lambda cfg: delta_prefill_cpu(DELTA, cfg.lanes, cfg.registers),
    "decode": lambda cfg: delta_decode_cpu(DELTA, cfg.lanes, cfg.registers),
}
FMA = {
    "avx512": r"\bvfmadd\d+ps\s+[^\n]*%zmm",
    "avx2": r"\bvfmadd\d+ps\s+[^\n]*%ymm",
    "neon": r"\bfmla\s+v\d+\.4s",
}


@pytest.fixture(scope="module")
def assembly():
    cache: dict[tuple[str, str], str] = {}

    def get(isa: str, kernel: str) -> str:
        if (isa, kernel) not in cache:
            mtriple, mcpu = CPUS[isa]
            target = tvm.target.Target(
                {"kind": "llvm", "mtriple": mtriple, "mcpu": mcpu, "num-cores": 2}
            )
            func = KERNELS[kernel](KernelConfig.for_target(target))
            cache[isa, kernel] = cpu_asm(func, target)
        return cache[isa, kernel]

    return get


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("isa", list(CPUS))
def test_state_kernels_use_the_widest_vector_fma(assembly, isa, kernel):
    asm = assembly(isa, kernel)
    assert len(re.findall(FMA[isa], asm)) >= 8, f"{kernel} on {isa}: too few vector FMAs"
    if isa == "avx2":
        assert not re.findall(r"%zmm\d+", asm)
    if isa == "neon":
        assert not re.findall(r"%[xyz]mm\d+", asm)
