"""`dist/lib/`: the models' libraries, one archive for all of them or one per model.

Every model was compiled with its own symbol prefix, so their objects can share one archive
(and one .so on Android) without clashes; the app then links a single library.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mlcx.targets.mobile import MobileTarget

COMBINED_NAME = "libmlcx_models"


@dataclass(frozen=True)
class ModelLibraries:
    static: Path  # the .a
    shared: Path | None  # the .so, on targets that have one


Layout = Callable[[MobileTarget, dict[str, Path], Path], dict[str, ModelLibraries]]


def _with_shared(target: MobileTarget, static: Path) -> ModelLibraries:
    if not target.platform.shared_library:
        return ModelLibraries(static, None)
    shared = static.with_suffix(".so")
    target.link_shared(shared, static)
    return ModelLibraries(static, shared)


def combined(target: MobileTarget, archives: dict[str, Path], lib_dir: Path):
    static = lib_dir / f"{COMBINED_NAME}.a"
    target.merge(static, list(archives.values()))
    libs = _with_shared(target, static)
    return {model_id: libs for model_id in archives}


def per_model(target: MobileTarget, archives: dict[str, Path], lib_dir: Path):
    out = {}
    for model_id, archive in archives.items():
        static = lib_dir / f"lib{model_id}.a"
        shutil.copyfile(archive, static)
        out[model_id] = _with_shared(target, static)
    return out


LAYOUTS: dict[str, Layout] = {"combined": combined, "per-model": per_model}
