"""Kernels built once: a parametrized test that runs one kernel at several token counts, or two
files that build the same kernel, compile it once per session (in memory), and what a compile
leaves (a shared library, assembly, a WebGPU kernel's plan and shaders) is kept on disk in
`~/.cache/mlcx/test-kernels/` for later runs (tests/support/disk_cache.py).

In memory, keyed by the kernel's TIR itself (two builds of one spec are structurally equal) and
the full target. On disk, by the kernel's TVMScript, the target, TVM's version and what else made
the file: for a CPU library or its assembly the TIR pipeline's sources (the rest of that compile
is TVM's own), for a WebGPU kernel's plan the compiling sources' hash (mlcx's plan writer). So
an entry never outlives a change to the builder or the pipeline that made it, and a change
elsewhere in mlcx leaves it in use. MLCX_TEST_KERNELS=off keeps nothing on disk; =DIR keeps it
in DIR."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import tvm
import tvm_ffi
from tvm import tirx

from mlcx.compile import jit
from mlcx.passes import lowered_store, tir_pipeline
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


def on_disk(
    func: tirx.PrimFunc,
    target: str,
    suffix: str,
    write: Callable[[Path], None],
    made_by: Callable[[], str] = jit.code_hash,
) -> Path:
    """The file `write(path)` makes for `func` on `target` (`suffix`: its kind, e.g. ".so";
    `made_by()`: what mlcx code decides it besides the kernel), written once per machine (with
    the cache off, each time, into a temporary folder)."""
    return kept_entry(ROOT, _disk_key(func, target, made_by()), suffix, write)


def _disk_key(func: tirx.PrimFunc, target: str, made_by: str) -> str:
    digest = hashlib.sha256()
    for part in (func.script(show_meta=True), target, made_by, tvm.__version__):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


def _compile(func: tirx.PrimFunc, target: tvm.target.Target):
    """`func` compiled as `main` for `target`, lowered as the artifacts lower it."""
    return tvm.compile(tvm.IRModule({"main": func}), target, tir_pipeline=tir_pipeline.NAME)


def cpu_module(func: tirx.PrimFunc, target: tvm.target.Target) -> tvm.runtime.Module:
    """`func` compiled for `target` (a CPU this machine runs) and loaded."""

    def load() -> tvm.runtime.Module:
        def write(path: Path) -> None:
            _compile(func, target).export_library(str(path))

        path = on_disk(func, str(target), ".so", write, lowered_store.pipeline_identity)
        return tvm.runtime.load_module(str(path))

    return cached(func, str(target), load)


def cpu_asm(func: tirx.PrimFunc, target: tvm.target.Target) -> str:
    """The assembly LLVM emits for `func` on `target` (a cross-compile: nothing runs)."""

    def write(path: Path) -> None:
        path.write_text(_compile(func, target).mod.inspect_source("asm"))

    def read() -> str:
        return on_disk(func, str(target), ".s", write, lowered_store.pipeline_identity).read_text()

    return cached(func, f"asm {target}", read)
