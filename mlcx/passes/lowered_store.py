"""GPU kernels lowered by the TIR pipeline, kept on disk between processes: opt-in, by
$MLCX_LOWERED_KERNELS (a directory; the test suite sets one).

Lowering is most of a GPU compile (a tiny model for webgpu: 8.4 s of 12.3 s, TVM 0.27, one
SPR core), and a change to one kernel leaves every other kernel's TIR as it was: what was lowered
before is read back (a GPU linear kernel, 1.4 MB of JSON: 0.035 s, against 0.8 s to lower it;
one Zen 4 core). CPU kernels stay in memory only: lowered, they are unrolled loop nests whose
JSON took longer to read through tvm.ir.load_json than to lower again (not measured since).

An entry is keyed as the in-memory one (mlcx.passes.lowered_kernels: the function's name,
target and structure, the pass context and module attributes) and by what lowers it: TVM's
version and the sources of mlcx's TIR pipeline. A hit is compared structurally with the
function asked for, so a hash collision lowers again. Entries are written whole (a staging
file renamed) so that processes may share the directory."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import tvm
import tvm_ffi
from tvm_ffi.serialization import from_json_graph_str

from mlcx.cache import write_whole

ENV = "MLCX_LOWERED_KERNELS"
GPU_KINDS = frozenset({"cuda", "webgpu", "vulkan", "metal", "opencl", "rocm"})
_PIPELINE_SOURCES = (
    "passes/tir_pipeline.py",
    "passes/lowered_kernels.py",
    "passes/lowered_store.py",
    "kernels/lowering_marks.py",
)
_MLCX = Path(__file__).resolve().parents[1]


def root(target: tvm.target.Target | None) -> Path | None:
    """The directory to keep `target`'s kernels in; None: memory only."""
    where = os.environ.get(ENV)
    if not where or where == "off" or target is None or target.kind.name not in GPU_KINDS:
        return None
    return Path(where)


@functools.lru_cache(maxsize=1)
def pipeline_identity() -> str:
    """What lowers a kernel besides its TIR: TVM's version and mlcx's TIR pipeline sources."""
    digest = hashlib.sha256(tvm.__version__.encode())
    for name in _PIPELINE_SOURCES:
        digest.update((_MLCX / name).read_bytes())
    return digest.hexdigest()


def entry(folder: Path, key: tuple) -> Path:
    text = repr((key, pipeline_identity()))
    return folder / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def load(path: Path, func, attrs):
    """(functions, after_split) saved at `path` for a structurally equal `func` and `attrs`;
    None when there is none."""
    try:
        # not tvm.ir.load_json: its upgrade of older TVMs' JSON (a Python parse and dump, 90%
        # of a read) has nothing to do for an entry this TVM version wrote (the key holds it)
        saved = from_json_graph_str(path.read_text())
    except (OSError, ValueError, RuntimeError):  # unreadable, or not what TVM saved
        return None
    known, known_attrs, functions, after_split = saved
    if not (tvm_ffi.structural_equal(known, func) and tvm_ffi.structural_equal(known_attrs, attrs)):
        return None
    os.utime(path)  # used: pruning keeps it
    target = func.attrs.get("target")
    return _with_host(functions, target), _with_host(after_split, target)


def _with_host(mod: tvm.IRModule, target) -> dict:
    """The module's functions, each device kernel's target given back its host: JSON keeps a
    target without it, and TVM's build groups kernels by their target's text (two groups, two
    device modules, where lowering afresh gives one)."""
    functions = {}
    for gv, func in mod.functions.items():
        own = func.attrs.get("target") if func.attrs is not None else None
        if own is not None and own.host is None and _hostless(own) == _hostless(target):
            func = func.with_attr("target", target)
        functions[gv] = func
    return functions


def _hostless(target) -> dict:
    """The target as its JSON text says, less its host."""
    return {k: v for k, v in json.loads(str(target)).items() if k != "host"}


def save(path: Path, func, attrs, functions: dict, after_split: dict) -> None:
    record = tvm.ir.save_json(
        tvm_ffi.convert([func, attrs, tvm.IRModule(functions), tvm.IRModule(after_split)])
    )
    write_whole(path, lambda staging: staging.write_text(record))
