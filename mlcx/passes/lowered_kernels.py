"""Lowered TIR functions kept for the rest of the process, found again by the function itself.

Compiles in one process build the same kernels again and again: the test suite's tiny models of
one width share every GPU linear kernel (four tiny models for cuda: 77 functions, 46
different), and a server or an encoder compile builds beside a model. Lowering one GPU linear
kernel takes 1.5-3.6 s (TVM 0.27, 2 cores), most of a GPU compile. What TVM's default TIR
pipeline (the one mlcx.passes.tir_pipeline lowers with) makes of a function lowered alone
depends on the function (its attributes name its target and its lowering marks), its name, the
module's attributes and the pass context's options, so its result is kept under those and
handed out for a structurally equal function; lowering runs again for anything else. The
kernels are also kept on disk between processes where $MLCX_LOWERED_KERNELS names a directory
(mlcx.passes.lowered_store).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import tvm
import tvm_ffi

from mlcx.passes import lowered_store

KEPT_MOST = 256  # functions (a GPU linear kernel lowered: 1-2 MB); the least recently used go first


@dataclass(frozen=True)
class Lowered:
    """What the pipeline made of one function lowered alone."""

    functions: dict  # GlobalVar -> PrimFunc: the host function and its device kernels
    after_split: dict  # the same as SplitHostDevice left them


_KEPT: OrderedDict[tuple, list[tuple[tvm.tirx.PrimFunc, object, Lowered]]] = OrderedDict()


def context_key(mod: tvm.IRModule, ctx: tvm.transform.PassContext) -> tuple:
    """What besides the function decides its lowering: the pass context's options and the
    module's attributes (hashed; compared structurally on a hit)."""
    config = tuple(sorted((str(k), str(v)) for k, v in ctx.config.items()))
    passes = (tuple(map(str, ctx.required_pass)), tuple(map(str, ctx.disabled_pass)))
    attrs = mod.attrs if mod.attrs is not None else {}
    return (ctx.opt_level, config, passes, tvm_ffi.structural_hash(attrs))


def lowered(name: str, func, mod: tvm.IRModule, context: tuple, lower: Callable[[], Lowered]):
    """`lower()`'s result for `func` (named `name`, in `mod`), made once per process."""
    target = str(func.attrs.get("target")) if func.attrs is not None else ""
    key = (name, target, tvm_ffi.structural_hash(func), context)
    attrs = mod.attrs if mod.attrs is not None else {}
    bucket = _KEPT.setdefault(key, [])
    _KEPT.move_to_end(key)
    for known, known_attrs, done in bucket:
        if tvm_ffi.structural_equal(known, func) and tvm_ffi.structural_equal(known_attrs, attrs):
            return done
    done = _from_disk(key, func, attrs, lower)
    bucket.append((func, attrs, done))
    while len(_KEPT) > KEPT_MOST:
        _KEPT.popitem(last=False)
    return done


def _from_disk(key: tuple, func, attrs, lower: Callable[[], Lowered]) -> Lowered:
    """`lower()`'s result, read from the disk store where it keeps this function's target
    (mlcx.passes.lowered_store) and written there when it was not."""
    folder = lowered_store.root(func.attrs.get("target") if func.attrs is not None else None)
    if folder is None:
        return lower()
    path = lowered_store.entry(folder, key)
    found = lowered_store.load(path, func, attrs) if path.exists() else None
    if found is not None:
        return Lowered(*found)
    done = lower()
    lowered_store.save(path, func, attrs, done.functions, done.after_split)
    return done


def forget() -> None:
    _KEPT.clear()
