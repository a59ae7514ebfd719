"""Resolving the MODEL argument of run commands: an artifact dir, or a model to JIT-compile."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.cache import compiled_dir
from mlcx.compile import CompileRequest, compile_model


def resolve_artifact(model: str, quiet: bool = False) -> Artifact:
    """An artifact directory as is; anything else (a preset, a .gguf, an HF folder) is
    compiled for this CPU into the cache on first use, like MLC-LLM's JIT."""
    if Artifact.is_artifact(model):
        return Artifact(model)
    key = hashlib.sha256(
        str(Path(model).expanduser().resolve() if Path(model).exists() else model).encode()
    ).hexdigest()[:12]
    out = compiled_dir("artifacts", f"{Path(model).stem}-cpu-{key}")
    if not Artifact.is_artifact(out):
        if not quiet:
            print(f"compiling {model} for this CPU into {out} (first run only) ...", flush=True)
        compile_model(CompileRequest(model=model, target="cpu", output=out))
    return Artifact(out)
