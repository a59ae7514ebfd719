"""Where mlcx keeps downloaded models and just-in-time compiled artifacts."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$MLCX_CACHE, else $XDG_CACHE_HOME/mlcx, else ~/.cache/mlcx."""
    if os.environ.get("MLCX_CACHE"):
        return Path(os.environ["MLCX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mlcx"


# Part of the name of every cached compile: bumped when what the same compile request
# produces changes (kernels, weight layouts), so that caches built by an older mlcx are
# compiled again instead of reused. 2: CPU weights stored row-tiled. 3: K-quant and 5-bit
# GGUF blocks kept (no longer dequantized to float32).
COMPILE_GENERATION = 3


def compiled_dir(kind: str, name: str) -> Path:
    """The cache folder of one compile (`kind`: "artifacts" for JIT, "bench/artifacts")."""
    return cache_dir() / kind / f"{name}-g{COMPILE_GENERATION}"
