"""The row-tiled kernels of Q2_K, Q3_K, IQ4_NL and IQ4_XS cross-compiled for each CPU family
and read back as assembly (as tests/kernels/test_cpu_isa.py does for the other formats): the
int16 dot products are `vpdpwssd` on AVX-512 VNNI, `vpmaddwd` in ymm registers on AVX2 and
widening multiplies on NEON, and IQ4's value table is one `vpshufb` (zmm / ymm) or `tbl`."""

from __future__ import annotations

import re

import pytest
import tvm

from mlcx.kernels.cpu.kernel_config import KernelConfig, LinearKernels
from mlcx.kernels.cpu.linear_kernels import build_linear
from mlcx.kernels.cpu.linear_spec import LinearSpec
from mlcx.kernels.cpu.rows import PlainRows
from mlcx.quantization.formats import format_from_name
from tests.support.kernel_cache import cpu_asm

# IQ4_NL reads its codes as IQ4_XS does (one table shuffle; only their scales differ): its
# assembly is checked once, on the CPU without a table instruction (the last test)
KINDS = ["q2_k", "q3_k", "iq4_xs"]
TABLE_KINDS = ("iq4_xs",)


def _asm(mtriple: str, mcpu: str, kind: str, kernels=LinearKernels.INT16) -> str:
    target = tvm.target.Target({"kind": "llvm", "mtriple": mtriple, "mcpu": mcpu, "num-cores": 2})
    spec = LinearSpec(PlainRows(512), format_from_name(f"{kind}-t16"), 96, False)
    func = build_linear(spec, KernelConfig.for_target(target, kernels))
    return cpu_asm(func, target)


def _count(asm: str, pattern: str) -> int:
    return len(re.findall(pattern, asm))


@pytest.mark.parametrize("kind", KINDS)
def test_avx512_vnni_gets_vpdpwssd_and_a_zmm_table_shuffle(kind):
    asm = _asm("x86_64-linux-gnu", "sapphirerapids", kind)
    assert _count(asm, r"\bvpdpwssd\b") > 0
    shuffles = _count(asm, r"\bvpshufb\s+%zmm")
    assert shuffles > 0 if kind in TABLE_KINDS else shuffles == 0


@pytest.mark.parametrize("kind", KINDS)
def test_avx2_stays_in_ymm_registers(kind):
    asm = _asm("x86_64-linux-gnu", "znver3", kind)
    assert _count(asm, r"%zmm\d+") == 0 and _count(asm, r"\bvpdpwssd\b") == 0
    assert _count(asm, r"\bvpmaddwd\b") > 0
    if kind in TABLE_KINDS:
        assert _count(asm, r"\bvpshufb\s+%ymm") > 0


@pytest.mark.parametrize("kind", KINDS)
def test_arm64_gets_neon_multiplies_and_tbl(kind):
    asm = _asm("aarch64-linux-gnu", "neoverse-n1", kind)
    assert _count(asm, r"\bsmull2?\b") > 0 and _count(asm, r"%[xy]mm") == 0
    if kind in TABLE_KINDS:  # LLVM shuffles with `tbl` too: IQ4 adds its lookups to Q4_K's
        baseline = _asm("aarch64-linux-gnu", "neoverse-n1", "q4_k")
        assert _count(asm, r"\btbl\b") > _count(baseline, r"\btbl\b")


@pytest.mark.parametrize("kind", KINDS)
def test_int8_long_steps_get_vpdpbusd(kind):
    asm = _asm("x86_64-linux-gnu", "sapphirerapids", kind, LinearKernels.INT8)
    assert _count(asm, r"\bvpdpbusd\b") > 0  # u8 codes (IQ4: table value + 128) x s8 rows
    assert _count(asm, r"\bvpdpwssd\b") > 0  # steps of up to 16 tokens stay int16


def test_a_cpu_without_a_table_instruction_still_builds_iq4():
    asm = _asm("x86_64-linux-gnu", "x86-64", "iq4_nl")  # SSE2 only: the select tree
    assert _count(asm, r"\bpshufb\b") == 0 and _count(asm, r"\bpmaddwd\b") > 0
