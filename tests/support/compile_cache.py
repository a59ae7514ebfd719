"""The tests' disk cache of compiled tiny artifacts: `compile_model(req)` as mlcx's, but a
request compiled before (by any worker, in any earlier run of any checkout on this machine) is
copied from `~/.cache/mlcx/test-artifacts/` (tests/support/disk_cache.py) instead of compiled
again.

Keyed as the JIT cache keys compiles (mlcx.compile.jit.key_parts: code hash, request, TVM target,
tuning database, format version), except that sources are keyed by content, not path: the tests'
tiny models are written afresh into temporary folders each run, byte for byte the same. Any path
in the request (the model, an mmproj, a tuning database) is keyed the same way. A CUDA request
is also keyed by the nvcc the target finds (with it the library holds a fatbin, without it the
kernels' source).

Callers get their own copy in `req.output`, so a test that edits or breaks an artifact never
reaches the cache. The warnings mlcx logged while compiling are kept beside the entry and logged
again on every hit, so tests that read the compile's log (caplog) see what a compile says.
MLCX_TEST_ARTIFACTS=off compiles everything afresh; MLCX_TEST_ARTIFACTS=DIR keeps them in DIR.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, replace
from importlib.metadata import version
from pathlib import Path
from typing import TypeVar

from mlcx.artifact.config import CONFIG_FILE
from mlcx.compile import jit
from mlcx.compile import model as compile_module
from mlcx.compile.model import CompileRequest
from mlcx.frontends.presets import PRESETS
from mlcx.targets import cuda
from tests.support.disk_cache import cache_root, kept_entry, making, touch, tree_digest

T = TypeVar("T")
ROOT = cache_root("MLCX_TEST_ARTIFACTS", "test-artifacts")


def compile_model(req: CompileRequest, progress=None) -> Path:
    """The artifact of `req` in `req.output`, from the cache when it was compiled before."""
    if str(ROOT) == "off":
        return compile_module.compile_model(req, progress)
    entry = ROOT / request_key(req)[:24]
    if (entry / CONFIG_FILE).exists() or not _fill(entry, req, progress):
        _replay(entry)
        touch(entry)
    out = Path(req.output)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(entry, out)
    _record_source(out, req)
    return out


def cached_result(req: CompileRequest, kind: str, make: Callable[[], T]) -> T:
    """`make()`'s result (JSON: what the compile of `req` would show, e.g. the rule that
    schedules each kernel), kept beside the artifacts under the request's key and `kind`."""
    return _kept_json(request_key(req), kind, make)


def cached_json(kind: str, parts: dict, make: Callable[[], T]) -> T:
    """`make()`'s result (JSON) for work that is not a whole compile (scheduling a module, a
    TVM behaviour), kept under `parts` and what decides any compile: the compiling sources'
    hash and TVM's and tvm-ffi's versions."""
    versions = {name: version(name) for name in ("apache-tvm", "apache-tvm-ffi")}
    key = jit.digest({"kind": kind, "code": jit.code_hash(), **versions, **parts})
    return _kept_json(key, kind, make)


def _kept_json(key: str, kind: str, make: Callable[[], T]) -> T:
    path = kept_entry(ROOT, key[:24], f".{kind}.json", lambda p: p.write_text(json.dumps(make())))
    return json.loads(path.read_text())


def request_key(req: CompileRequest) -> str:
    parts = jit.key_parts(req)
    parts["source"] = _content(req.model)
    parts["request"] = {
        name: _content(value) if _is_path(value) else value
        for name, value in asdict(req).items()
        if name != "output"
    }
    if req.target == "cuda":  # the library holds a fatbin when nvcc is found, else source
        parts["nvcc"] = str(cuda.which("nvcc"))
    parts["request"]["options"] = {
        name: _content(value) if _is_path(value) else value
        for name, value in parts["request"]["options"].items()
    }
    return jit.digest(parts)


def _fill(entry: Path, req: CompileRequest, progress) -> bool:
    """Compiles `req` into `entry` under a lock: a second worker asking for the same key waits
    for the first instead of compiling it again. False: that other worker compiled it."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (entry / CONFIG_FILE).exists():
            return False
        staging = entry.with_name(f"{entry.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        kept = _Kept()
        logging.getLogger("mlcx").addHandler(kept)
        try:
            with making(ROOT):
                compile_module.compile_model(replace(req, output=staging), progress)
            _log_file(entry).write_text(json.dumps(kept.records))
            staging.rename(entry)
        finally:
            logging.getLogger("mlcx").removeHandler(kept)
            shutil.rmtree(staging, ignore_errors=True)
        return True


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


def _log_file(entry: Path) -> Path:
    return entry.with_name(f"{entry.name}.log.json")


def _replay(entry: Path) -> None:
    path = _log_file(entry)
    for name, level, message in json.loads(path.read_text()) if path.exists() else []:
        logging.getLogger(name).log(level, "%s", message)


def _record_source(out: Path, req: CompileRequest) -> None:
    """The copy names this request's source, as a fresh compile of it would."""
    if req.model in PRESETS:
        return
    path = out / CONFIG_FILE
    config = json.loads(path.read_text())
    if "source" in config:
        config["source"] = str(Path(req.model).resolve())
        path.write_text(json.dumps(config, indent=2))


def _is_path(value) -> bool:
    if isinstance(value, Path):
        return True
    return isinstance(value, str) and value not in PRESETS and os.sep in value


def _content(value) -> str:
    """A file or folder by its name and the bytes of its files (the model's name comes from its
    file or folder name); anything else (a preset name) as it is."""
    if value is None or str(value) in PRESETS or not Path(value).exists():
        return str(value)
    return tree_digest(Path(value))
