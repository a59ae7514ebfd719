"""The JIT cache: a model compiled on first use into `<cache>/artifacts/`, keyed by everything
that changes the compiled output, so nothing has to be bumped by hand.

The key covers the source model's identity (a preset's pinned hash; a file's or folder's
paths, sizes and modification times, small files by content), the whole compile request
(target, quantization, KV dtype, context, pages, options with the linear kernels resolved,
the TVM target itself: CPU model and threads where the target uses them), the tuning
database's content, the artifact format version and a hash of the mlcx sources that compile
(kernels, passes, quantization, frontends, targets, artifact, compile). `mlcx generate`,
`chat`, `serve` and every `mlcx bench` command share this one cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
from dataclasses import asdict, replace
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.artifact.embedding_config import EMBED_TASK, EmbeddingArtifact, artifact_task
from mlcx.cache import cache_dir
from mlcx.compile.model import CompileRequest, compile_model, resolve_options
from mlcx.formats import FORMAT_VERSION
from mlcx.frontends.presets import PRESETS
from mlcx.frontends.source import resolve_path
from mlcx.kernels.lora_layout import LoraSpec
from mlcx.targets.registry import get_target

MLCX = Path(__file__).resolve().parents[1]
# What decides the compiled output, besides the request: read whole on each first key.
COMPILING_SOURCES = (
    "kernels",
    "passes",
    "quantization",
    "frontends",
    "targets",
    "artifact",
    "compile",
    "formats.py",
)
SMALL_FILE = 1 << 20  # files up to this size are keyed by content, larger ones by size+mtime


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    digest = hashlib.sha256()
    for name in COMPILING_SOURCES:
        root = MLCX / name
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            digest.update(str(path.relative_to(MLCX)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _file_identity(path: Path) -> str:
    stat = path.stat()
    if stat.st_size <= SMALL_FILE:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _tree_identity(path: Path) -> dict[str, str]:
    """Each file under `path` (or `path` itself) by its identity."""
    if path.is_file():
        return {str(path.resolve()): _file_identity(path)}
    return {
        str(p.relative_to(path)): _file_identity(p) for p in sorted(path.rglob("*")) if p.is_file()
    }


def source_identity(model: str) -> dict[str, str]:
    if model in PRESETS:
        return {model: PRESETS[model].sha256}
    path = resolve_path(model).resolve()
    return {"path": str(path), **_tree_identity(path)}


def cache_key(req: CompileRequest) -> str:
    """A hex digest of everything that changes what compiling `req` produces (not its output
    directory)."""
    return digest(key_parts(req))


def digest(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def key_parts(req: CompileRequest) -> dict:
    """What `cache_key` hashes, by name (the tests' artifact cache swaps in its own source
    identity)."""
    target = get_target(req.target)
    options = resolve_options(req.options, target)
    db = options.tuning_db
    # threads reach the output through the TVM target alone (num-cores, where it is used)
    keyed = replace(options, tuning_db=None, num_threads=None)
    return {
        "format": FORMAT_VERSION,
        "code": code_hash(),
        "source": source_identity(req.model),
        "request": asdict(replace(req, output=Path(), options=keyed)),
        "tvm_target": str(target.tvm_target(options).export()),
        "tuning_db": _tree_identity(db) if db is not None else None,
        "lora": _tree_identity(Path(req.lora)) if req.lora is not None else None,
    }


def artifact_dir(req: CompileRequest) -> Path:
    """Where the JIT cache keeps the compile of `req`."""
    stem = Path(req.model).stem if req.model not in PRESETS else req.model
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{stem}-{req.target}")
    return cache_dir() / "artifacts" / f"{name}-{cache_key(req)[:16]}"


def resolve_artifact(
    model: str,
    quiet: bool = False,
    kv_dtype: str | None = None,
    lora_slots: LoraSpec | None = None,
    target: str = "cpu",
) -> Artifact:
    """An artifact directory as is; anything else (a preset, a .gguf, an HF folder) is
    compiled for `target` (this CPU) into the cache on first use, like MLC-LLM's JIT.
    `kv_dtype`: the KV cache dtype to compile with (None: the math's), which an artifact must
    already have; `lora_slots`: the LoRA adapter slots to compile in (runtime.lora checks an
    artifact's against its adapters)."""
    if artifact_task(model) == EMBED_TASK:
        return EmbeddingArtifact(model)  # type: ignore[return-value]  (no KV cache to check)
    if Artifact.is_artifact(model):
        artifact = Artifact(model)
        if kv_dtype is not None and artifact.config.cache_dtype != kv_dtype:
            raise ValueError(
                f"{model} was compiled with a {artifact.config.cache_dtype} KV cache, not "
                f"{kv_dtype}; recompile it (`mlcx compile --kv-dtype {kv_dtype}`) or drop "
                "--kv-dtype"
            )
        return artifact
    request = CompileRequest(model=model, target=target, kv_dtype=kv_dtype, lora_slots=lora_slots)
    out = compile_cached(request, quiet)
    if artifact_task(out) == EMBED_TASK:
        return EmbeddingArtifact(out)  # type: ignore[return-value]
    return Artifact(out)


def compile_cached(req: CompileRequest, quiet: bool = False) -> Path:
    """The JIT cache's compile of `req` (its output ignored), compiled on first use."""
    out = artifact_dir(req)
    if not Artifact.is_artifact(out):
        if not quiet:
            print(f"compiling {req.model} for this CPU into {out} (first run only) ...", flush=True)
        _compile_into(req, out)
    return out


def _compile_into(req: CompileRequest, out: Path) -> None:
    """Compiles beside `out` and moves the result in whole: a compile that dies leaves no half
    artifact, and of two processes compiling the same key the first to finish wins."""
    staging = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        compile_model(replace(req, output=staging))
        with contextlib.suppress(OSError):  # another process put the same artifact there first
            staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
