"""What the CPU kernels need to know about the target: threads, vector width, tile sizes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import tvm
from tvm.target import codegen

from mlcx.kernels.cpu.byte_table import shuffle_for

# Widest vector register by CPU feature, widest first. LLVM's own vector-width query
# answers 512 for every x86 CPU, so the target's feature list decides.
VECTOR_BITS: tuple[tuple[str, int], ...] = (
    ("avx512f", 512),
    ("avx2", 256),
    ("avx", 256),
    ("neon", 128),
    ("sse2", 128),
)


INT8_DOT_FEATURES = {"avx512bw", "avx512vnni"}  # vec.dot_u8s8's vpdpbusd on 512-bit vectors
# vec.madd_i16 in one instruction on vectors at least as wide as float32's (vpmaddwd, vpdpwssd)
INT16_PAIR_FEATURES = ("avx2", "avx512bw")


def cpu_features(target: tvm.target.Target) -> set[str]:
    with target:
        return set(codegen.llvm_get_cpu_features(target))


def has_int8_dot(target: tvm.target.Target) -> bool:
    """Whether the int8 kernels (LinearKernels.INT8) can run on `target`."""
    return cpu_features(target) >= INT8_DOT_FEATURES


def vector_bits(target: tvm.target.Target) -> int:
    features = cpu_features(target)
    return next((bits for name, bits in VECTOR_BITS if name in features), 128)


class LinearKernels(str, Enum):
    """Which kernels compute a CPU model's linear layers: one choice, made at compile (or tune)
    time and recorded in the artifact's config and in a tuning database.

    int16: mlcx's hand-written kernels; quantized weights meet int16-quantized activations
           (one scale per 32 features, exact int32 dot products): the fast default.
    int8:  the same kernels, but a step of more than 16 tokens (a prefill) meets 4-bit weights
           with int8 activations, as llama.cpp's Q4_0 does: twice the multiplies per
           instruction (AVX512-VNNI hosts only); the greedy tokens may drift from int16's.
    float: quantized linears keep TVM's float32 dequantize-matmul, computing exactly what the
           reference computes (slower); float-weight linears still use mlcx's float kernels.
    tvm:   every linear stays TVM's plain dequantize-matmul, which `mlcx tune` can tune.
    """

    INT16 = "int16"
    INT8 = "int8"
    FLOAT = "float"
    TVM = "tvm"

    @property
    def integer(self) -> bool:
        """mlcx's integer kernels, reading row-tiled weights."""
        return self in (LinearKernels.INT16, LinearKernels.INT8)

    @property
    def hand_written(self) -> bool:
        return self is not LinearKernels.TVM


@dataclass(frozen=True)
class KernelConfig:
    """Tile sizes of the hand-written linear kernels for one target.

    threads:        parallel chunks per kernel (the target's num-cores)
    lanes:          f32 lanes of one vector register
    registers:      vector registers the microkernels may fill
    gemv_rows:      output rows one decode step walks together; 1 because interleaving the
                    rows' byte streams cost ~30% of the read bandwidth the hardware prefetchers
                    reach on one sequential stream (measured on the 2048x16384 4-bit GEMV)
    gemv_max_tokens: up to this many tokens take the row-major decode (GEMV) path; 4 because
                    the 4-bit GEMV unpacks each weight group once for a few tokens, where the
                    GEMM's tile packing cost more (measured at 2-5 tokens on the default
                    model's shapes)
    batch_tokens:   tokens of one row-tiled microkernel step (mlcx.kernels.cpu.qtiled): a
                    register of 16 output rows each for the int32 and the float sums, so a
                    quarter of the registers (spills above that cost 20-40%, measured)
    gemm_rows:      output rows of one packed weight tile (a multiple of `lanes`)
    gemm_tokens:    tokens of one GEMM microkernel step
    prefetch_bytes: how far ahead the decode kernels prefetch weights (0: never)
    linear_kernels: which linears get hand-written kernels (see LinearKernels)
    int8_dot:       the target has the u8 x s8 dot product the int8 kernels need (vpdpbusd)
    int16_pairs:    the target sums int16 products in pairs in one instruction as wide as its
                    float vectors (x86 AVX2 and up: vpmaddwd; vpdpwssd with AVX512-VNNI), so
                    int16 dot products beat float32 FMAs (the dense attention's scores)
    byte_table:     the target's byte shuffle for 16-entry code tables (byte_table.shuffle_for;
                    "": none, a select tree)
    """

    threads: int = 1
    lanes: int = 8
    registers: int = 16
    gemv_rows: int = 1
    gemv_max_tokens: int = 4
    batch_tokens: int = 8
    gemm_rows: int = 8
    gemm_tokens: int = 4
    prefetch_bytes: int = 2048
    linear_kernels: LinearKernels = LinearKernels.INT16
    int8_dot: bool = False
    int16_pairs: bool = False
    byte_table: str = ""

    def __post_init__(self) -> None:
        if self.linear_kernels is LinearKernels.INT8 and not self.int8_dot:
            raise ValueError(
                "--linear-kernels int8 needs a CPU with AVX512-VNNI (vpdpbusd); this target "
                "has none: use int16"
            )
        for name in ("threads", "lanes", "gemv_rows", "gemv_max_tokens", "gemm_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"kernel config {name} must be positive")
        if self.batch_tokens < 1:
            raise ValueError("kernel config batch_tokens must be positive")
        if self.lanes not in (4, 8, 16):
            raise ValueError(f"f32 lanes must be 4, 8 or 16, not {self.lanes}")
        if self.gemm_rows % self.lanes:
            raise ValueError(f"gemm_rows {self.gemm_rows} is not a multiple of {self.lanes} lanes")

    @staticmethod
    def for_target(
        target: tvm.target.Target, linear_kernels: LinearKernels = LinearKernels.INT16
    ) -> KernelConfig:
        """Defaults from the target: its core count and its widest vector register."""
        threads = int(target.attrs.get("num-cores", 1) or 1)
        bits = vector_bits(target)
        lanes = max(4, min(16, bits // 32))
        registers = 32 if bits >= 512 else 16
        return KernelConfig(
            threads=threads,
            lanes=lanes,
            registers=registers,
            gemm_rows=2 * lanes,  # two vector registers of output rows per tile
            gemm_tokens=4 if registers == 16 else 8,
            batch_tokens=max(2, registers * lanes // (4 * 16)),
            linear_kernels=linear_kernels,
            int8_dot=has_int8_dot(target),
            int16_pairs=any(f in cpu_features(target) for f in INT16_PAIR_FEATURES),
            byte_table=shuffle_for(cpu_features(target)),
        )
