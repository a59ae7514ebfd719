"""The tests' disk cache of compiled tiny artifacts: `compile_model(req)` as mlcx's, but a
request compiled before (by any worker, in any earlier run of this checkout) is copied from
`<repo>/.cache/test-artifacts/` instead of compiled again.

Keyed as the JIT cache keys compiles (mlcx.compile.jit.key_parts: code hash, request, TVM target,
tuning database, format version), except that sources are keyed by content, not path: the tests'
tiny models are written afresh into temporary folders each run, byte for byte the same. Any path
in the request (the model, an mmproj, a tuning database) is keyed the same way.

Callers get their own copy in `req.output`, so a test that edits or breaks an artifact never
reaches the cache. MLCX_TEST_ARTIFACTS=off compiles everything afresh.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from dataclasses import asdict, replace
from pathlib import Path

from mlcx.artifact.config import CONFIG_FILE
from mlcx.compile import jit
from mlcx.compile import model as compile_module
from mlcx.compile.model import CompileRequest
from mlcx.frontends.presets import PRESETS

REPO = Path(__file__).resolve().parents[2]
ROOT = Path(os.environ.get("MLCX_TEST_ARTIFACTS") or REPO / ".cache" / "test-artifacts")


def compile_model(req: CompileRequest, progress=None) -> Path:
    """The artifact of `req` in `req.output`, from the cache when it was compiled before."""
    if str(ROOT) == "off":
        return compile_module.compile_model(req, progress)
    entry = ROOT / request_key(req)[:24]
    if not (entry / CONFIG_FILE).exists():
        _fill(entry, req, progress)
    out = Path(req.output)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(entry, out)
    _record_source(out, req)
    return out


def request_key(req: CompileRequest) -> str:
    parts = jit.key_parts(req)
    parts["source"] = _content(req.model)
    parts["request"] = {
        name: _content(value) if _is_path(value) else value
        for name, value in asdict(req).items()
        if name != "output"
    }
    parts["request"]["options"] = {
        name: _content(value) if _is_path(value) else value
        for name, value in parts["request"]["options"].items()
    }
    return jit.digest(parts)


def _fill(entry: Path, req: CompileRequest, progress) -> None:
    """Compiles `req` into `entry` under a lock: a second worker asking for the same key waits
    for the first instead of compiling it again."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (entry / CONFIG_FILE).exists():
            return
        staging = entry.with_name(f"{entry.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            compile_module.compile_model(replace(req, output=staging), progress)
            staging.rename(entry)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


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
    """A file or folder by its name and the bytes of its files (relative names and contents:
    the model's name comes from its file or folder name); anything else (a preset name) as it
    is."""
    if value is None or str(value) in PRESETS or not Path(value).exists():
        return str(value)
    path = Path(value)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256(path.name.encode())
    for file in files:
        digest.update(b"\0" + str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as stream:
            digest.update(hashlib.file_digest(stream, "sha256").digest())
    return digest.hexdigest()
