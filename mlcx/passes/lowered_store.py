"""Kernels lowered by the TIR pipeline, kept on disk between processes: opt-in, by
$MLCX_LOWERED_KERNELS (a directory; the test suite sets one).

Lowering is most of a GPU compile (a tiny model for webgpu: 8.4 s of 12.3 s, TVM 0.27, one
SPR core), and a change to one kernel leaves every other kernel's TIR as it was: what was lowered
before is read back (a GPU linear kernel, 1.4 MB of JSON: 0.035 s, against 0.8 s to lower it;
one Zen 4 core). CPU kernels too: the default model's 13 took 3.1 s to lower, its compile in a
new process 10.6 s, 6.9 s with them read back (their objects kept: mlcx.targets.llvm_objects).

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
KINDS = frozenset({"llvm", "cuda", "webgpu", "vulkan", "metal", "opencl", "rocm"})
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
    if not where or where == "off" or target is None or target.kind.name not in KINDS:
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
        known, known_attrs, functions, after_split, *hosted = from_json_graph_str(path.read_text())
    except (OSError, ValueError, RuntimeError, TypeError):  # unreadable, or not what save wrote
        return None
    if not (tvm_ffi.structural_equal(known, func) and tvm_ffi.structural_equal(known_attrs, attrs)):
        return None
    os.utime(path)  # used: pruning keeps it
    target = func.attrs.get("target")
    modules = (functions, after_split)
    return tuple(_with_host(mod, target, names) for mod, names in zip(modules, hosted, strict=True))


def _with_host(mod: tvm.IRModule, target, hosted) -> dict:
    """The module's functions, the targets of those lowering left with a host (`hosted`: a GPU
    kernel's) given back their host: JSON keeps a target without it, and TVM's build groups
    kernels by their target's text (two groups, two device modules, where lowering afresh gives
    one). A CPU kernel comes out of lowering without a host; it stays so, or its kept object
    would be keyed apart from a freshly lowered one's (mlcx.targets.llvm_objects)."""
    hosted, functions = set(map(str, hosted)), {}
    for gv, func in mod.functions.items():
        own = func.attrs.get("target") if func.attrs is not None else None
        lost = gv.name_hint in hosted and own is not None and not _has_host(own)
        functions[gv] = func.with_attr("target", target) if lost and _same(own, target) else func
    return functions


def _hosted(functions: dict) -> list[str]:
    """The names of the functions whose target names a host."""
    targets = {gv.name_hint: f.attrs.get("target") for gv, f in functions.items() if f.attrs}
    return [name for name, target in targets.items() if target is not None and _has_host(target)]


def _has_host(target) -> bool:
    # by its text: Target.host reads None for the targets lowering leaves (TVM 0.27)
    return "host" in json.loads(str(target))


def _same(own, target) -> bool:
    """`own` is `target` less its host, as their JSON texts say."""
    hostless = {k: v for k, v in json.loads(str(target)).items() if k != "host"}
    return json.loads(str(own)) == hostless


def save(path: Path, func, attrs, functions: dict, after_split: dict) -> None:
    modules = [tvm.IRModule(functions), tvm.IRModule(after_split)]
    hosted = [_hosted(functions), _hosted(after_split)]
    record = tvm.ir.save_json(tvm_ffi.convert([func, attrs, *modules, *hosted]))
    write_whole(path, lambda staging: staging.write_text(record))
