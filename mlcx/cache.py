"""Where mlcx keeps downloaded models and just-in-time compiled artifacts (mlcx/compile/jit.py)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$MLCX_CACHE, else $XDG_CACHE_HOME/mlcx, else ~/.cache/mlcx."""
    if os.environ.get("MLCX_CACHE"):
        return Path(os.environ["MLCX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mlcx"
