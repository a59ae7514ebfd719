"""Tile sizes and capabilities of the GPU kernels for one target."""

from __future__ import annotations

from dataclasses import dataclass

# Attributes of every hand-written GPU kernel: scheduled already (dlight leaves it alone) and
# opaque to operator fusion (FuseTIR can only fuse block-structured functions).
KERNEL_ATTRS = {"tirx.noalias": True, "tirx.is_scheduled": True, "op_pattern": 8}


@dataclass(frozen=True)
class GpuConfig:
    """lanes:           threads along output rows in a workgroup row (a multiple of 4: groups of
                     four lanes share activations)
    groups:          thread rows of a workgroup: token groups (GEMM) or K splits (GEMV)
    gemm_rows/tokens: the accumulator tile of one GEMM thread
    gemv_rows:       output rows of one GEMV thread
    gemv_max_tokens: up to this many tokens take the GEMV kernel
    subgroups:       the target has subgroup (warp) shuffles of width >= 4
    share:           lanes of an attention unit (one query row, one KV head), 2 or 4
    decode_splits:   chunks of each row's keys in decode attention (split-K; 1: none)
    prefill_splits:  the same for prefill rows
    """

    lanes: int = 8
    groups: int = 8
    gemm_rows: int = 8
    gemm_tokens: int = 8
    gemv_rows: int = 4
    gemv_max_tokens: int = 4
    subgroups: bool = True
    share: int = 4
    decode_splits: int = 8
    prefill_splits: int = 1

    def __post_init__(self) -> None:
        if self.lanes % 4:
            raise ValueError(f"lanes must be a multiple of 4, not {self.lanes}")
        for name in ("groups", "gemm_rows", "gemm_tokens", "gemv_rows", "gemv_max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"GPU config {name} must be positive")


# Target kinds whose TVM codegen has the shuffles mlcx's kernels use (OpenCL's lacks them).
SHUFFLE_KINDS = ("cuda", "metal", "webgpu")


# Split-K of attention by target kind. A unit walks its keys one after another, so on GPUs with
# many cores (CUDA, Apple) more, shorter chunks keep the machine busy and hide load latency
# (H100, 512-token context: the sequential walk was a third of a decode step); on WebGPU, where
# the adapter may be a CPU (lavapipe, SwiftShader), 8 decode chunks and unsplit prefill were best.
ATTENTION_SPLITS = {"cuda": (32, 8), "metal": (32, 8)}  # kind -> (decode, prefill)

# Tokens of a GEMM thread's accumulator tile by target kind (its rows stay gemm_rows = 8).
# WebGPU runs on what a browser has: laptops' and phones' GPUs, whose threads keep far fewer
# registers than CUDA's 255, and SwiftShader where there is no GPU. Compiled for sm_90, the 8x8
# tile's prefill GEMM takes all 255 registers a thread has, the 4x8 one 167 (dlight's matmul uses
# 4x4 on WebGPU); SwiftShader builds the 4x8 pipeline in 0.4x the time. Its speed on a real GPU
# against 8x8 is what scripts/gpu_bench_tiles.py measures, not yet run.
GEMM_TOKENS = {"webgpu": 4}


def gpu_config(target, subgroups: bool = True) -> GpuConfig:
    """The config for a TVM target: subgroup shuffles where wanted and its codegen has them."""
    kind = target.kind.name
    decode, prefill = ATTENTION_SPLITS.get(kind, (8, 1))
    return GpuConfig(
        gemm_tokens=GEMM_TOKENS.get(kind, GpuConfig.gemm_tokens),
        subgroups=subgroups and kind in SHUFFLE_KINDS,
        decode_splits=decode,
        prefill_splits=prefill,
    )
