"""Kernels built once per test session: a parametrized test that runs one kernel at several
token counts, or two files that build the same kernel, compile it once.

Keyed by the kernel's TIR itself (two builds of one spec are structurally equal) and the full
target, so an entry never outlives a change to the builder that made it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import tvm
import tvm_ffi
from tvm import tirx

from mlcx.passes import tir_pipeline

T = TypeVar("T")
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


def cpu_module(func: tirx.PrimFunc, target: tvm.target.Target) -> tvm.runtime.Module:
    """`func` compiled as `main` for `target`, lowered as the artifacts lower it."""
    mod = tvm.IRModule({"main": func})
    return cached(
        func, str(target), lambda: tvm.compile(mod, target, tir_pipeline=tir_pipeline.NAME).mod
    )


def cpu_asm(func: tirx.PrimFunc, target: tvm.target.Target) -> str:
    """The assembly LLVM emits for `func` on `target` (a cross-compile: nothing runs)."""
    return cpu_module(func, target).inspect_source("asm")
