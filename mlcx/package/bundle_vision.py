"""The image encoder of a vision-language model in the phone package (the artifact's vision/,
see mlcx.artifact.encoder), for apps that link the TVM runtime themselves:

    lib/...                             its objects, in the model's library (libraries.py)
    bundle/<id>/vision/encoder.json     its EncoderConfig, `library` = the dist-relative library
    bundle/<id>/vision/params/          index.json always, the shards with bundle_weights
                                        (else downloaded from `<weights_url>vision/`)

On phones the encoder was compiled under `<model_lib>vision_` (mlcx.compile.encoder), so
its objects share the model's library without clashes. A text-only artifact adds nothing.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.artifact.encoder import ENCODER_FILE, VISION_DIR, encoder_dir, read_encoder
from mlcx.artifact.weight_shards import INDEX
from mlcx.compile.encoder import VISION_PREFIX
from mlcx.package.app_config import AppVision, AppWeights
from mlcx.package.config import PackageModel


def model_archives(artifact: Artifact) -> list[Path]:
    """The archives of the model's library: its own, then its encoder's when it has one."""
    encoder = read_encoder(artifact.path)
    if encoder is None:
        return [artifact.library_path]
    return [artifact.library_path, encoder_dir(artifact.path) / encoder.library]


def bundle_encoder(
    model: PackageModel, artifact: Artifact, library: str, folder: Path
) -> AppVision | None:
    """Writes the encoder's files into the model's bundle `folder`; its app-config entry, or
    None (nothing written) for a text-only artifact. `library`: the model's, dist-relative."""
    encoder = read_encoder(artifact.path)
    if encoder is None:
        return None
    target = folder / VISION_DIR
    (target / "params").mkdir(parents=True)
    (target / ENCODER_FILE).write_text(dataclasses.replace(encoder, library=library).to_json())
    shards = copy_params(encoder_dir(artifact.path) / "params", target / "params", model)
    rel = f"{model.id}/{VISION_DIR}"
    url = f"{model.weights_url.rstrip('/')}/{VISION_DIR}/" if model.weights_url else None
    weights = AppWeights(
        model.bundle_weights, f"{rel}/params/{INDEX}", sum(int(s["nbytes"]) for s in shards), url
    )
    return AppVision(
        model_lib=model.system_lib_prefix + VISION_PREFIX,
        config=f"{rel}/{ENCODER_FILE}",
        weights=weights,
        inputs=encoder.inputs,
        preprocess=encoder.preprocess,
        image_token_id=encoder.image_token_id,
        tokens_per_image=encoder.tokens_per_image,
        dtype=encoder.dtype,
    )


def copy_params(source: Path, target: Path, model: PackageModel) -> list[dict]:
    """A params/ folder into the bundle (the text model's, the encoder's): the index always,
    the shards when bundled; returns the index's shard list."""
    shutil.copyfile(source / INDEX, target / INDEX)
    shards = json.loads((source / INDEX).read_text())["shards"]
    if model.bundle_weights:
        for shard in shards:
            shutil.copyfile(source / shard["file"], target / shard["file"])
    return shards
