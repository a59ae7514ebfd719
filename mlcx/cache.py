"""Where mlcx keeps downloaded models and just-in-time compiled artifacts (mlcx/compile/jit.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def cache_dir() -> Path:
    """$MLCX_CACHE, else $XDG_CACHE_HOME/mlcx, else ~/.cache/mlcx."""
    if os.environ.get("MLCX_CACHE"):
        return Path(os.environ["MLCX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mlcx"


def write_whole(path: Path, write: Callable[[Path], None]) -> None:
    """`write(file)` into a staging file renamed to `path`: processes sharing a store never read
    half an entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f"{path.stem}.tmp-{os.getpid()}{path.suffix}")
    write(staging)
    os.replace(staging, path)
