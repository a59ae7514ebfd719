"""What every compilation target provides."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import tvm

from mlcx.kernels.cpu.kernel_config import LinearKernels

ENCODER_LINEARS = ("float", "int16")  # BuildOptions.encoder_linears


@dataclass(frozen=True)
class BuildOptions:
    """Target knobs from the command line; each target reads the ones it knows."""

    num_threads: int | None = None
    gpu_arch: str | None = None
    tuning_db: Path | None = None
    # CPU: which kernels compute the linear layers (kernels.cpu.kernel_config.LinearKernels);
    # None: int16, or what the tuning database was tuned with (resolved once, by compile).
    linear_kernels: LinearKernels | None = None
    # GPU targets: mlcx's kernels share activations through subgroup shuffles; off for WebGPU
    # adapters without the subgroups feature (OpenCL/android never uses them)
    subgroups: bool = True
    # cuda: decode runs as CUDA graphs, one per batch bucket (mlcx.passes.gpu.cuda_graph)
    cuda_graphs: bool = True
    # cuda: decode's linears as dlight's LowBatchGEMV ("dlight") or mlcx's GEMV kernel ("mlcx")
    decode_gemv: str = "dlight"
    # CPU: an image encoder's float linears on float32 FMAs ("float", the reference's numbers)
    # or on 12-bit codes summed as int16 pairs ("int16": about float16's error, as llama.cpp's
    # f16 mmproj; ~1.6x on AVX512-VNNI; float where the CPU has no int16 pair dot product)
    encoder_linears: str = "float"
    # Mobile targets: prefix of every symbol in the static library, so several models can be
    # linked into one app; the app finds a model with TVM's SystemLib(prefix).
    system_lib_prefix: str | None = None

    def __post_init__(self) -> None:
        if self.encoder_linears not in ENCODER_LINEARS:
            choices = ", ".join(ENCODER_LINEARS)
            raise ValueError(f"encoder linears must be {choices}, not {self.encoder_linears!r}")
        if self.decode_gemv not in ("dlight", "mlcx"):
            raise ValueError(f"decode GEMV must be dlight or mlcx, not {self.decode_gemv!r}")
        prefix = self.system_lib_prefix
        if prefix is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix):
            raise ValueError(f"system lib prefix must be a C identifier, not {prefix!r}")


class Target(Protocol):
    name: str
    summary: str
    kernel_kind: str  # which attention kernels the model uses: "cpu" or "gpu"
    runtime: str  # what runs the artifact: "tvm" (Relax VM), "wgpu", or "app" (mobile)

    def tvm_target(self, options: BuildOptions) -> tvm.target.Target: ...

    def default_quantization(self, from_gguf: bool) -> str: ...

    def build(
        self, mod: tvm.IRModule, target: tvm.target.Target, options: BuildOptions
    ) -> tvm.runtime.Executable: ...

    def export(self, executable, out_dir: Path, options: BuildOptions) -> str:
        """Write the compiled library into out_dir; return its file name."""
        ...
