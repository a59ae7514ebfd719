"""`dist/lib/`: the models' libraries, one archive for all of them or one per model.

Every model was compiled with its own symbol prefix, so their objects can share one archive
(and one .so on Android) without clashes; the app then links a single library. A model comes
as one archive, or two with an image encoder (compiled under `<prefix>vision_`): both go into
the model's library.
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


# model id -> its archives (the model's, then its encoder's)
Layout = Callable[[MobileTarget, dict[str, list[Path]], Path], dict[str, ModelLibraries]]


def _with_shared(target: MobileTarget, static: Path) -> ModelLibraries:
    if not target.platform.shared_library:
        return ModelLibraries(static, None)
    shared = static.with_suffix(".so")
    target.link_shared(shared, static)
    return ModelLibraries(static, shared)


def combined(target: MobileTarget, archives: dict[str, list[Path]], lib_dir: Path):
    static = lib_dir / f"{COMBINED_NAME}.a"
    target.merge(static, [path for paths in archives.values() for path in paths])
    libs = _with_shared(target, static)
    return {model_id: libs for model_id in archives}


def per_model(target: MobileTarget, archives: dict[str, list[Path]], lib_dir: Path):
    out = {}
    for model_id, paths in archives.items():
        static = lib_dir / f"lib{model_id}.a"
        if len(paths) == 1:  # a text model's archive as compiled
            shutil.copyfile(paths[0], static)
        else:
            target.merge(static, paths)
        out[model_id] = _with_shared(target, static)
    return out


LAYOUTS: dict[str, Layout] = {"combined": combined, "per-model": per_model}
