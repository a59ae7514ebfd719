"""Resolving the MODEL argument of run commands: an artifact dir, or a model to JIT-compile."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.cache import compiled_dir
from mlcx.compile import CompileRequest, compile_model


def resolve_artifact(model: str, quiet: bool = False, kv_dtype: str | None = None) -> Artifact:
    """An artifact directory as is; anything else (a preset, a .gguf, an HF folder) is
    compiled for this CPU into the cache on first use, like MLC-LLM's JIT. `kv_dtype`: the
    KV cache dtype to compile with (None: the math's), which an artifact must already have."""
    if Artifact.is_artifact(model):
        artifact = Artifact(model)
        if kv_dtype is not None and artifact.config.cache_dtype != kv_dtype:
            raise ValueError(
                f"{model} was compiled with a {artifact.config.cache_dtype} KV cache, not "
                f"{kv_dtype}; recompile it (`mlcx compile --kv-dtype {kv_dtype}`) or drop "
                "--kv-dtype"
            )
        return artifact
    key = hashlib.sha256(
        str(Path(model).expanduser().resolve() if Path(model).exists() else model).encode()
    ).hexdigest()[:12]
    kv = f"-kv-{kv_dtype}" if kv_dtype else ""  # the math's KV dtype keeps the plain name
    out = compiled_dir("artifacts", f"{Path(model).stem}-cpu-{key}{kv}")
    if not Artifact.is_artifact(out):
        if not quiet:
            print(f"compiling {model} for this CPU into {out} (first run only) ...", flush=True)
        compile_model(CompileRequest(model=model, target="cpu", output=out, kv_dtype=kv_dtype))
    return Artifact(out)
