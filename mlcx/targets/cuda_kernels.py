"""Ahead-of-time CUDA kernels: nvcc compiles TVM's CUDA source, and the library embeds the
result in place of the source.

A library built by `export_library` carries its modules in `__tvm_ffi__library_bin`; the CUDA
module's payload is `format | function table | code`, and TVM's CUDA runtime hands any format
other than "cuda" (source) straight to cuModuleLoadData. So swapping ("cuda", source) for
("fatbin", nvcc output) in that payload is all it takes; the blob is then assembled into the
library with `.incbin` (instant, whatever its size).

nvcc takes 4-7 s for a tiny model's kernels (one Zen 4 core), most of a CUDA compile once its
kernels' lowering is kept (mlcx.passes.lowered_store); where $MLCX_KERNEL_OBJECTS names a store
(mlcx.targets.llvm_objects), each fatbin is kept there too, keyed by the source, the arch, the
nvcc that compiled it and TVM's version (its nvcc options), and a source compiled before is
read back.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from pathlib import Path

import tvm
import tvm_ffi
from tvm.support import nvcc

from mlcx.cache import write_whole
from mlcx.errors import ToolchainError
from mlcx.targets import llvm_objects
from mlcx.targets.library_blob import DeviceModule, parse_blob
from mlcx.targets.toolchain import which

BLOB_SYMBOL = "__tvm_ffi__library_bin"


def compile_fatbin(source: str, arch: str) -> bytes:
    """SASS for `arch` plus PTX of the same arch, which the driver can JIT on newer GPUs."""
    gencode = _gencode(arch)
    store = llvm_objects.root()
    if store is None:
        return _nvcc(source, arch, gencode)
    key = repr((source, gencode, _nvcc_identity(), tvm.__version__))
    path = store / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.fatbin"
    if path.exists():
        os.utime(path)  # used: pruning keeps it
        return path.read_bytes()
    fatbin = _nvcc(source, arch, gencode)
    write_whole(path, lambda staging: staging.write_bytes(fatbin))
    return fatbin


def _gencode(arch: str) -> list[str]:
    number = arch.removeprefix("sm_")
    return [
        "-gencode",
        f"arch=compute_{number},code=sm_{number}",
        "-gencode",
        f"arch=compute_{number},code=compute_{number}",
    ]


def _nvcc(source: str, arch: str, gencode: list[str]) -> bytes:
    with tvm.target.Target({"kind": "cuda", "arch": arch}):
        try:
            return bytes(
                nvcc.compile_cuda(source, target_format="fatbin", arch=gencode, compiler="nvcc")
            )
        except RuntimeError as err:
            tail = str(err).strip().splitlines()[-20:]
            raise ToolchainError(
                "nvcc could not compile the kernels:\n" + "\n".join(tail)
            ) from None


@functools.cache
def _nvcc_identity() -> str:
    """Which nvcc compiles: its path and its version banner."""
    found = which("nvcc")
    if found is None:
        return "no nvcc"
    banner = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    return f"{found}\n{banner}"


def with_fatbin(blob_bytes: bytes, fatbin: bytes) -> bytes:
    blob = parse_blob(blob_bytes)
    cuda = DeviceModule.parse("cuda", blob.payload("cuda"))
    if cuda.fmt != "cuda":
        raise ValueError(f"the CUDA module is already compiled ({cuda.fmt})")
    return blob.replace("cuda", cuda.with_code("fatbin", fatbin).to_bytes()).to_bytes()


def _assembly(blob_path: Path) -> str:
    return "\n".join(
        [
            '.section .rodata,"a"',
            f".globl {BLOB_SYMBOL}",
            ".balign 16",
            f"{BLOB_SYMBOL}:",
            f'.incbin "{blob_path}"',
            '.section .note.GNU-stack,"",@progbits',
            "",
        ]
    )


def pack_with_fatbin(
    module: tvm.runtime.Module, is_system_lib: bool, prefix: str, workspace: str, fatbin: bytes
) -> str:
    """`export_library`'s fpack_imports hook: the import blob, with the fatbin, as assembly."""
    if is_system_lib or prefix:
        raise ValueError("ahead-of-time CUDA kernels are packed for shared libraries only")
    packed = tvm_ffi.get_global_func("runtime.ModulePackImportsToTensor")(module)
    blob_path = Path(workspace) / "imports.bin"
    blob_path.write_bytes(with_fatbin(packed.numpy().tobytes(), fatbin))
    asm_path = Path(workspace) / "imports.S"
    asm_path.write_text(_assembly(blob_path))
    return str(asm_path)
