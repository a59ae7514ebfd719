"""Kernels built once: a parametrized test that runs one kernel at several token counts, or two
files that build the same kernel, compile it once per session (in memory), and what a compile
leaves (a shared library, assembly, a WebGPU kernel's plan and shaders) is kept on disk in
`~/.cache/mlcx/test-kernels/` for later runs (tests/support/disk_cache.py).

In memory, keyed by the kernel's TIR itself (two builds of one spec are structurally equal) and
the full target. On disk, by the kernel's TVMScript, the target, the compiling sources' hash
and TVM's version, so an entry never outlives a change to the builder or the pipeline that made
it. MLCX_TEST_KERNELS=off keeps nothing on disk; =DIR keeps it in DIR."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import tvm
import tvm_ffi
from tvm import tirx

from mlcx.compile import jit
from mlcx.passes import tir_pipeline
from tests.support.disk_cache import cache_root, kept_entry

T = TypeVar("T")
ROOT = cache_root("MLCX_TEST_KERNELS", "test-kernels")
_ENTRIES: dict[tuple, list[tuple[tirx.PrimFunc, object]]] = {}


def cached(func: tirx.PrimFunc, target: str, make: Callable[[], T]) -> T:
    """`make()`'s result for `func` on `target` (any text naming it), made on first use."""
    bucket = _ENTRIES.setdefault((tvm_ffi.structural_hash(func), target), [])
    for known, value in bucket:
        if tvm_ffi.structural_equal(known, func):
            return value
    value = make()
    bucket.append((func, value))
    return value


def on_disk(func: tirx.PrimFunc, target: str, suffix: str, write: Callable[[Path], None]) -> Path:
    """The file `write(path)` makes for `func` on `target` (`suffix`: its kind, e.g. ".so"),
    written once per machine (with the cache off, each time, into a temporary folder)."""
    return kept_entry(ROOT, _disk_key(func, target), suffix, write)


def _disk_key(func: tirx.PrimFunc, target: str) -> str:
    digest = hashlib.sha256()
    for part in (func.script(show_meta=True), target, jit.code_hash(), tvm.__version__):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


def _compile(func: tirx.PrimFunc, target: tvm.target.Target):
    """`func` compiled as `main` for `target`, lowered as the artifacts lower it."""
    return tvm.compile(tvm.IRModule({"main": func}), target, tir_pipeline=tir_pipeline.NAME)


def cpu_module(func: tirx.PrimFunc, target: tvm.target.Target) -> tvm.runtime.Module:
    """`func` compiled for `target` (a CPU this machine runs) and loaded."""

    def load() -> tvm.runtime.Module:
        path = on_disk(
            func, str(target), ".so", lambda p: _compile(func, target).export_library(str(p))
        )
        return tvm.runtime.load_module(str(path))

    return cached(func, str(target), load)


def cpu_asm(func: tirx.PrimFunc, target: tvm.target.Target) -> str:
    """The assembly LLVM emits for `func` on `target` (a cross-compile: nothing runs)."""

    def write(path: Path) -> None:
        path.write_text(_compile(func, target).mod.inspect_source("asm"))

    return cached(
        func, f"asm {target}", lambda: on_disk(func, str(target), ".s", write).read_text()
    )
