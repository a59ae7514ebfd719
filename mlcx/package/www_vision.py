"""The image encoder of a vision-language model's WebGPU variant in the app (the artifact's
vision/, see mlcx.artifact.encoder), so that the app pages answer images:

    www/models/<id>/<quantization>/vision/      encoder.json, its plan, shaders/,
                                                params/index.json (where the page looks)
    bundle/<id>/<quantization>/vision/params/   its weight shards, when bundled

As the text model's, the encoder's shards stay out of www/: bundled once under bundle/, or
downloaded from `<weights_url><quantization>/vision/`. They are the WebGPU variant's own (the
encoder follows the variant's activation dtype), never the phone artifact's. An artifact
without an encoder adds nothing.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.artifact.encoder import VISION_DIR, encoder_dir, read_encoder
from mlcx.artifact.weight_shards import INDEX
from mlcx.package.config import PackageModel


@dataclass(frozen=True)
class EncoderWeights:
    location: str  # as WwwVariant.weights: www-relative ("../bundle/...") or a download URL
    bytes: int


def _shards(artifact_dir: Path) -> list[dict] | None:
    """The encoder's weight shards (file, nbytes, sha256), or None without an encoder."""
    if read_encoder(artifact_dir) is None:
        return None
    index = encoder_dir(artifact_dir) / "params" / INDEX
    return json.loads(index.read_text())["shards"]


def encoder_weight_bytes(artifact_dir: Path) -> int:
    """The bytes of the artifact's encoder weights (0 without an encoder)."""
    return sum(int(s["nbytes"]) for s in _shards(artifact_dir) or [])


def copy_encoder(
    package: PackageModel, artifact: Artifact, quantization: str, dist: Path, plan_folder: Path
) -> EncoderWeights | None:
    """The encoder's small files beside the plan in `plan_folder` and its shards where the
    variant's weights go; None (nothing written) for a text-only artifact."""
    shards = _shards(artifact.path)
    if shards is None:
        return None
    source = encoder_dir(artifact.path)
    names = {s["file"] for s in shards}

    def shard_files(folder: str, files: list[str]) -> list[str]:
        return [f for f in files if Path(folder) == source / "params" and f in names]

    shutil.copytree(source, plan_folder / VISION_DIR, ignore=shard_files)
    location = _store(package, source / "params", quantization, dist)
    return EncoderWeights(location, encoder_weight_bytes(artifact.path))


def _store(package: PackageModel, params: Path, quantization: str, dist: Path) -> str:
    """Bundles the shards of `params` (with their index) or names their download folder."""
    if not package.bundle_weights:
        return f"{str(package.weights_url).rstrip('/')}/{quantization}/{VISION_DIR}/"
    folder = dist / "bundle" / package.id / quantization / VISION_DIR / "params"
    folder.mkdir(parents=True)
    shutil.copyfile(params / INDEX, folder / INDEX)
    for shard in json.loads((params / INDEX).read_text())["shards"]:
        shutil.copyfile(params / shard["file"], folder / shard["file"])
    return f"../{folder.relative_to(dist).as_posix()}/"
