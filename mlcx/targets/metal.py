"""Apple GPUs on macOS: a Mach-O arm64 dylib (host code + Metal kernel source) for TVM's VM.

The dylib is linked here, on Linux, with clang + ld64.lld (Debian packages clang, lld): TVM
emits the Mach-O objects itself, and the TVM runtime symbols the objects use stay undefined
until the macOS apache-tvm wheel (which ships the Metal runtime) dlopens the library. Metal
compiles the kernel source when the library loads.
"""

from __future__ import annotations

from pathlib import Path

import tvm

from mlcx.targets import device_code
from mlcx.targets.base import BuildOptions
from mlcx.targets.toolchain import link_macho_dylib, require

HOST_TRIPLE = "arm64-apple-macos11.0"
LIBRARY = "model-metal.dylib"
SOURCE = "model-metal.metal"

# Apple silicon GPUs: 32-wide SIMD groups, 1024 threads and 32 KiB threadgroup memory.
METAL_LIMITS = {
    "max_threads_per_block": 1024,
    "max_num_threads": 1024,
    "thread_warp_size": 32,
    "max_shared_memory_per_block": 32768,
}


class MetalTarget:
    name = "metal"
    summary = (
        "Apple silicon Macs: Metal kernels in a Mach-O arm64 .dylib (linked here with "
        "clang + lld) that the macOS apache-tvm wheel loads"
    )
    kernel_kind = "gpu"
    runtime = "tvm"

    def tvm_target(self, options: BuildOptions) -> tvm.target.Target:
        host = {"kind": "llvm", "mtriple": HOST_TRIPLE, "mcpu": "apple-m1"}
        return tvm.target.Target({"kind": "metal", **METAL_LIMITS}, host=host)

    def default_quantization(self, from_gguf: bool) -> str:
        return device_code.default_quantization(from_gguf)

    def build(self, mod, target, options):
        require("clang", "ld64.lld")
        return device_code.build_gpu(mod, target, options.subgroups)

    def export(self, executable, out_dir: Path, options: BuildOptions, stem: str = "model") -> str:
        """`stem`: "encoder" for an image encoder beside the model (its own install name, so
        one process loads both)."""
        library = LIBRARY.replace("model", stem, 1)
        device_code.write_kernel_source(
            executable, "metal", out_dir / SOURCE.replace("model", stem, 1)
        )

        def link(output: str, objects: list[str], **_kwargs) -> None:
            paths = [Path(o) for o in objects]
            link_macho_dylib(Path(output), paths, HOST_TRIPLE, f"@rpath/{library}")

        executable.export_library(str(out_dir / library), fcompile=link)
        return library
