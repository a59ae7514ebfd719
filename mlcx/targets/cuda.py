"""NVIDIA GPUs: a shared library (host code + CUDA kernels) that TVM's Relax VM loads.

With nvcc on PATH the kernels are compiled here, ahead of time, into a fatbin (SASS for the
target arch + PTX of the same arch for newer GPUs) that replaces the CUDA source inside the
library, so loading needs neither nvrtc nor a compiler. Without nvcc the library keeps the
source and TVM's CUDA runtime compiles it with nvrtc when it loads.
"""

from __future__ import annotations

import logging
import re
from functools import partial
from pathlib import Path

import tvm

from mlcx.targets import cuda_kernels, device_code
from mlcx.targets.base import BuildOptions
from mlcx.targets.toolchain import which

log = logging.getLogger(__name__)

DEFAULT_ARCH = "sm_80"
LIBRARY = "model-cuda.so"
SOURCE = "model-cuda.cu"


def _local_arch() -> str | None:
    device = tvm.cuda(0)
    if not device.exist:
        return None
    return "sm_" + device.compute_version.replace(".", "")


def resolve_arch(requested: str | None) -> str:
    arch = requested or _local_arch() or DEFAULT_ARCH
    if not re.fullmatch(r"sm_\d{2,3}[af]?", arch):
        raise ValueError(f"CUDA arch must look like sm_80 or sm_90a, not {arch!r}")
    return arch


class CudaTarget:
    name = "cuda"
    summary = (
        f"NVIDIA GPUs: a shared library run by TVM's Relax VM; --arch (default: the local GPU, "
        f"else {DEFAULT_ARCH}); kernels compiled ahead of time when nvcc is on PATH"
    )
    kernel_kind = "gpu"
    runtime = "tvm"

    def tvm_target(self, options: BuildOptions) -> tvm.target.Target:
        spec = {
            "kind": "cuda",
            "arch": resolve_arch(options.gpu_arch),
            "max_threads_per_block": 1024,
            "max_num_threads": 1024,
            "thread_warp_size": 32,
            "max_shared_memory_per_block": 49152,
        }
        return tvm.target.Target(spec, host={"kind": "llvm"})

    def default_quantization(self, from_gguf: bool) -> str:
        return device_code.default_quantization(from_gguf)

    def build(self, mod, target, options):
        return device_code.build_gpu(
            mod,
            target,
            options.subgroups,
            cuda_graphs=options.cuda_graphs,
            decode_gemv=options.decode_gemv,
        )

    def export(self, executable, out_dir: Path, options: BuildOptions) -> str:
        source = device_code.write_kernel_source(executable, "cuda", out_dir / SOURCE)
        if which("nvcc") is None:
            log.info("nvcc not on PATH: the library keeps CUDA source, compiled by nvrtc on load")
            executable.export_library(str(out_dir / LIBRARY))
            return LIBRARY
        fatbin = cuda_kernels.compile_fatbin(source, resolve_arch(options.gpu_arch))
        pack = partial(cuda_kernels.pack_with_fatbin, fatbin=fatbin)
        executable.export_library(str(out_dir / LIBRARY), fpack_imports=pack)
        return LIBRARY
