"""What `mlcx web` serves, as WebLLM's `prebuiltAppConfig`: one record per artifact, its
`model_id` (the artifact folder's name, made unique) and `model` (the URL it is served under),
so that a WebLLM page picks a model by id and changes only its import.

The npm package's own `prebuilt_app_config.js` lists nothing (it cannot know where artifacts are
hosted); `mlcx web` answers that file with the module this writes instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.artifact.embedding_config import EMBED_TASK, EmbeddingArtifact, artifact_task
from mlcx.errors import ArtifactError

PREBUILT_MODULE = "prebuilt_app_config.js"
FIRST = "/artifact/"  # the first artifact also stays here (the demo page loads it)
FOLDER = "/artifacts/"  # every artifact under /artifacts/<model_id>/
# WebLLM's ModelType enum: what a record's model_type says
MODEL_TYPES = {"generate": 0, EMBED_TASK: 1}
TOKENIZER_FILES = ("tokenizer.json", "mlcx-tokenizer.json")


@dataclass(frozen=True)
class ServedModel:
    model_id: str
    path: Path
    task: str  # "generate" or "embed"
    library: str
    features: tuple[str, ...]

    @property
    def url(self) -> str:
        return f"{FOLDER}{self.model_id}/"

    def record(self) -> dict:
        """WebLLM's ModelRecord; `model_lib` names the plan (there is no wasm library), and
        `integrity` holds the SRI hashes of the files a load reads besides the weights (whose
        index keeps their sha256)."""
        files = {name: self.path / name for name in TOKENIZER_FILES}
        return {
            "model": self.url,
            "model_id": self.model_id,
            "model_lib": self.url + self.library,
            "model_type": MODEL_TYPES[self.task],
            "required_features": list(self.features),
            "integrity": {
                "config": _sri(self.path / "mlcx-config.json"),
                "model_lib": _sri(self.path / self.library),
                "tokenizer": {name: _sri(path) for name, path in files.items() if path.is_file()},
            },
        }


def _sri(path: Path) -> str:
    """Subresource Integrity's form of the file's sha256."""
    return "sha256-" + base64.b64encode(hashlib.sha256(path.read_bytes()).digest()).decode()


def _opened(path: Path):
    task = artifact_task(path)
    if task is None:
        raise ArtifactError(
            f"{path} is not an mlcx artifact (mlcx-config.json missing); create one with "
            "`mlcx compile MODEL --target webgpu -o DIR`"
        )
    return (EmbeddingArtifact(path) if task == EMBED_TASK else Artifact(path)), task


def served_model(path: Path, taken: set[str]) -> ServedModel:
    art, task = _opened(path)
    if art.config.runtime != "wgpu":
        raise ArtifactError(
            f"{path} was compiled for {art.config.target!r}; the browser runs artifacts "
            "of --target webgpu"
        )
    base = path.absolute().name or "model"  # a symlink's own name: its id
    model_id = base
    for n in range(2, len(taken) + 2):
        if model_id not in taken:
            break
        model_id = f"{base}-{n}"
    plan = json.loads((path / art.config.library).read_text())
    return ServedModel(model_id, path.resolve(), task, art.config.library, tuple(plan["features"]))


def served_models(paths: list[Path]) -> list[ServedModel]:
    if not paths:
        raise ValueError("give at least one artifact to serve")
    models: list[ServedModel] = []
    for path in paths:
        models.append(served_model(Path(path), {m.model_id for m in models}))
    return models


def prebuilt_module(models: list[ServedModel]) -> str:
    """The JS module that takes web/src/prebuilt_app_config.js's place."""
    config = {"cacheBackend": "cache", "model_list": [m.record() for m in models]}
    return (
        "// Written by `mlcx web`: the artifacts this server serves (mlcx/web/app_config.py).\n"
        f"export const prebuiltAppConfig = {json.dumps(config, indent=2)};\n"
    )
