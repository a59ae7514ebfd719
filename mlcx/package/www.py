"""`dist/www`: the browser runtime of web/, each model's WebGPU plan and the list of models an
app shell shows, served by the shells from one origin next to `dist/bundle`:

    www/index.html, style.css, src/*.js   the browser runtime (mlcx.web.bundle; never a fork)
    www/vendor/<lib>/<dist or lib>/       the tokenizer, Jinja and XGrammar libraries it imports
    www/mlcx-app.json                     models, variants, memory budgets, where weights are
    www/models/<id>/<quantization>/       mlcx-config.json, webgpu-plan.json, shaders/,
                                          tokenizer files, params/index.json, and for a
                                          vision-language model vision/ (www_vision.py)

Weights are stored once: a WebGPU plan's shards are byte-identical to the phone artifact's of
the same quantization, so that variant reads `bundle/<id>/params/`; a variant of another
quantization (the f32 fallback) has other bytes, kept once in `bundle/<id>/<quantization>/params/`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import INDEX
from mlcx.package.app_config import AppModel
from mlcx.package.config import PackageModel
from mlcx.package.www_vision import copy_encoder
from mlcx.web.assets import web_runtime

WWW_CONFIG_FILE = "mlcx-app.json"
ARTIFACT_FILES = ("mlcx-config.json", "tokenizer.json", "mlcx-tokenizer.json")

CompileWebGPU = Callable[[PackageModel, str], Artifact]  # (model, quantization) -> artifact


@dataclass(frozen=True)
class WwwVariant:
    quantization: str
    features: tuple[str, ...]  # WebGPU features the plan needs, e.g. ("shader-f16",)
    artifact: str  # www-relative folder of the plan, config, tokenizer and weight index
    weights: str  # where the shards are: www-relative ("../bundle/...") or a download URL
    weights_bundled: bool
    weights_bytes: int
    # the image encoder's shards (as `weights`) and their bytes; None: the model takes text only
    vision_weights: str | None = None
    vision_weights_bytes: int = 0


@dataclass(frozen=True)
class WwwModel:
    id: str
    name: str
    estimated_memory_bytes: int  # the runtime's budget: KV pages are what is left of it
    context_window: int
    variants: tuple[WwwVariant, ...]  # preferred first; the runtime takes the first it can run
    images: bool = False  # it has an image encoder: the app shells offer an image picker


def build_www(
    models: list[tuple[PackageModel, AppModel]], compile_webgpu: CompileWebGPU, out_dir: Path
) -> Path:
    """Writes out_dir/www (replacing it) and returns its app config's path."""
    www = out_dir / "www"
    shutil.rmtree(www, ignore_errors=True)
    web_runtime().copy_to(www)
    entries = [_model(package, app, compile_webgpu, out_dir) for package, app in models]
    path = www / WWW_CONFIG_FILE
    path.write_text(
        json.dumps({"format_version": 1, "models": [asdict(m) for m in entries]}, indent=2)
    )
    return path


def _model(
    package: PackageModel, app: AppModel, compile_webgpu: CompileWebGPU, dist: Path
) -> WwwModel:
    quantizations = [app.quantization]
    if package.fallback_quantization not in (None, app.quantization):
        quantizations.append(package.fallback_quantization)
    variants = []
    for quantization in quantizations:
        artifact = compile_webgpu(package, quantization)
        variants.append(_variant(package, artifact, quantization, dist))
    return WwwModel(
        id=package.id,
        name=artifact.config.model_name,
        estimated_memory_bytes=app.estimated_memory_bytes,
        context_window=app.context_window,
        variants=tuple(variants),
        images=all(v.vision_weights is not None for v in variants),
    )


def _variant(package: PackageModel, artifact: Artifact, quantization: str, dist: Path):
    rel = f"models/{package.id}/{quantization}"
    features = _copy_plan(artifact, dist / "www" / rel)
    index = (artifact.params_dir / INDEX).read_text()
    shards = json.loads(index)["shards"]
    weights = _weights_location(package, artifact, quantization, dist, index)
    encoder = copy_encoder(package, artifact, quantization, dist, dist / "www" / rel)
    return WwwVariant(
        quantization=quantization,
        features=features,
        artifact=f"{rel}/",
        weights=weights,
        weights_bundled=package.bundle_weights,
        weights_bytes=sum(int(s["nbytes"]) for s in shards),
        vision_weights=encoder.location if encoder else None,
        vision_weights_bytes=encoder.bytes if encoder else 0,
    )


def _copy_plan(artifact: Artifact, folder: Path) -> tuple[str, ...]:
    """The plan, its shaders, config, tokenizer files and weight index; returns the plan's
    WebGPU features."""
    (folder / "params").mkdir(parents=True)
    for name in (*ARTIFACT_FILES, artifact.config.library):
        shutil.copyfile(artifact.path / name, folder / name)
    shutil.copytree(artifact.path / "shaders", folder / "shaders")
    shutil.copyfile(artifact.params_dir / INDEX, folder / "params" / INDEX)
    plan = json.loads((artifact.path / artifact.config.library).read_text())
    return tuple(plan.get("features", ()))


def _weights_location(
    package: PackageModel, artifact: Artifact, quantization: str, dist: Path, index: str
) -> str:
    """Where the page reads the variant's shards: the bundle's params/ when they are the same
    bytes (equal indexes: same sha256 per shard), else their own folder, bundled once."""
    own = (dist / "bundle" / package.id / "params" / INDEX).read_text() != index
    folder = f"bundle/{package.id}/{quantization}/params" if own else f"bundle/{package.id}/params"
    if own:
        _store_shards(package, artifact, json.loads(index)["shards"], dist / folder, index)
    if package.bundle_weights:
        return f"../{folder}/"
    base = str(package.weights_url).rstrip("/") + "/"
    return f"{base}{quantization}/" if own else base


def _store_shards(package, artifact: Artifact, shards: list[dict], folder: Path, index: str):
    folder.mkdir(parents=True)
    (folder / INDEX).write_text(index)
    if package.bundle_weights:
        for shard in shards:
            shutil.copyfile(artifact.params_dir / shard["file"], folder / shard["file"])


def check_downloads(models: tuple[PackageModel, ...]) -> None:
    """Before any compile: an app downloads unbundled weights, so they need a weights_url."""
    for package in models:
        if not package.bundle_weights and not package.weights_url:
            raise ValueError(
                f"model {package.id}: bundle_weights is false, so the app downloads its "
                "weights; give a weights_url"
            )
