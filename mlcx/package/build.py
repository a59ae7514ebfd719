"""`mlcx package`: compile each model of a package config for one phone target, then lay out
what an app needs:

    dist/lib/                       libraries the app links (see libraries.py)
    dist/bundle/mlcx-app-config.json
    dist/bundle/<id>/               mlcx-config.json, tokenizer files, params/ (index always,
                                    shards when bundle_weights), a model with images its
                                    encoder's vision/ (see bundle_vision.py)

and with apps (`--app`): dist/www (the WebGPU runtime and plans, see www.py) and one app
project per shell kind (dist/ios, dist/android; see app_shells.py).
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

from mlcx.artifact.config import CONFIG_FILE, Artifact
from mlcx.artifact.weight_shards import INDEX
from mlcx.compile.model import CompileRequest, compile_model
from mlcx.frontends.tokenizer_assets import MLCX_TOKENIZER_JSON, TOKENIZER_JSON
from mlcx.package.app_config import APP_CONFIG_FILE, AppConfig, AppModel, AppWeights
from mlcx.package.app_shells import APP_SHELLS, resolve_apps
from mlcx.package.bundle_vision import bundle_encoder, copy_params, model_archives
from mlcx.package.config import PackageConfig, PackageModel
from mlcx.package.libraries import LAYOUTS, ModelLibraries
from mlcx.package.www import build_www, check_downloads
from mlcx.package.www_vision import encoder_weight_bytes
from mlcx.targets.base import BuildOptions
from mlcx.targets.mobile import MobileTarget
from mlcx.targets.registry import get_target

Report = Callable[[str], None]
WORK_DIR = ".build"


def build_package(
    config: PackageConfig, out_dir: Path, report: Report | None = None, apps: tuple[str, ...] = ()
) -> Path:
    """Writes the package into out_dir (replacing its lib/ and bundle/, and with apps its www/
    and app projects); returns the app config's path."""
    say = report or (lambda message: None)
    target = get_target(config.device)
    if not isinstance(target, MobileTarget):
        raise ValueError(f"{config.device} artifacts are not linked into apps")
    for kind in apps:
        resolve_apps(kind)  # ValueError naming the choices
    if apps:
        check_downloads(config.models)
    lib_dir, bundle_dir, work = (out_dir / n for n in ("lib", "bundle", WORK_DIR))
    for folder in (lib_dir, bundle_dir, work):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    artifacts = {}
    for index, model in enumerate(config.models, 1):
        say(f"[{index}/{len(config.models)}] compiling {model.id} for {config.device}")
        options = BuildOptions(system_lib_prefix=model.system_lib_prefix)
        artifacts[model.id] = _compile(
            model, config.device, work / model.id, model.quantization, options
        )
    say(f"linking libraries ({config.library})")
    archives = {mid: model_archives(art) for mid, art in artifacts.items()}
    libraries = LAYOUTS[config.library](target, archives, lib_dir)
    models = []
    for model in config.models:
        libs = libraries[model.id]
        models.append(_bundle(model, artifacts[model.id], libs, out_dir, bundle_dir))
    app = AppConfig(config.device, config.library, _library_list(libraries, out_dir), tuple(models))
    path = bundle_dir / APP_CONFIG_FILE
    path.write_text(app.to_json())
    if apps:
        _build_apps(config, models, apps, out_dir, say)
    shutil.rmtree(work)
    return path


def _build_apps(
    config: PackageConfig, models: list[AppModel], apps: tuple[str, ...], out_dir: Path, say: Report
) -> None:
    """dist/www (compiling each model for webgpu) and one project per app kind."""
    work = out_dir / WORK_DIR

    def compile_webgpu(model: PackageModel, quantization: str) -> Artifact:
        say(f"compiling {model.id} for webgpu ({quantization})")
        out = work / f"{model.id}-webgpu-{quantization}"
        return _compile(model, "webgpu", out, quantization, BuildOptions())

    www_config = build_www(list(zip(config.models, models, strict=True)), compile_webgpu, out_dir)
    for kind in apps:
        say(f"writing the {kind} app project")
        APP_SHELLS[kind].write(out_dir / kind, config.app, www_config)


def _compile(
    model: PackageModel, device: str, out: Path, quantization: str | None, options: BuildOptions
) -> Artifact:
    request = CompileRequest(
        model=model.source,
        target=device,
        quantization=quantization,
        output=out,
        context_window=model.context_window,
        options=options,
    )
    return Artifact(compile_model(request))


def _library_list(libraries: dict[str, ModelLibraries], root: Path) -> tuple[str, ...]:
    files = []
    for libs in libraries.values():
        for path in (libs.static, libs.shared):
            if path is not None and _rel(path, root) not in files:
                files.append(_rel(path, root))
    return tuple(files)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _copy_files(model: PackageModel, artifact: Artifact, folder: Path) -> list[dict]:
    """Tokenizer files and the weight index always, the shards when bundled; returns the
    index's shard list."""
    (folder / "params").mkdir(parents=True)
    for name in (TOKENIZER_JSON, MLCX_TOKENIZER_JSON):
        shutil.copyfile(artifact.path / name, folder / name)
    return copy_params(artifact.params_dir, folder / "params", model)


def _bundle(
    model: PackageModel, artifact: Artifact, libs: ModelLibraries, root: Path, bundle: Path
) -> AppModel:
    folder = bundle / model.id
    shards = _copy_files(model, artifact, folder)
    library = _rel(libs.static, root)
    config = dataclasses.replace(artifact.config, library=library)
    (folder / CONFIG_FILE).write_text(config.to_json())
    vision = bundle_encoder(model, artifact, library, folder)
    weight_bytes = sum(int(s["nbytes"]) for s in shards)
    return AppModel(
        id=model.id,
        model_lib=model.system_lib_prefix,
        library=library,
        shared_library=_rel(libs.shared, root) if libs.shared else None,
        bundle_dir=model.id,
        config=f"{model.id}/{CONFIG_FILE}",
        tokenizer=f"{model.id}/{TOKENIZER_JSON}",
        tokenizer_config=f"{model.id}/{MLCX_TOKENIZER_JSON}",
        weights=AppWeights(
            model.bundle_weights, f"{model.id}/params/{INDEX}", weight_bytes, model.weights_url
        ),
        estimated_memory_bytes=model.estimated_memory_bytes or _estimate(artifact, weight_bytes),
        context_window=artifact.config.context_window,
        quantization=artifact.config.quantization,
        activation_dtype=artifact.config.activation_dtype,
        device=str(artifact.config.tvm_target.get("kind", "")),
        vision=vision,
    )


def _estimate(artifact: Artifact, weight_bytes: int) -> int:
    """Weights (the image encoder's too) plus a KV cache holding one full context window (and
    a hybrid model's state)."""
    pages = -(-artifact.config.context_window // artifact.config.page_size)
    state = artifact.config.state_slot_bytes
    encoder = encoder_weight_bytes(artifact.path)
    return weight_bytes + encoder + pages * artifact.config.kv_block_bytes + state
