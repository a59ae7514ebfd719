"""`mlcx package` of a model with images (the vision tests' tiny Gemma 3) for apps that link the
TVM runtime themselves: its image encoder goes into the model's library (iPhone: the combined
archive beside a text model; Android: the model's own archive and .so), under the system-lib
prefix `<model_lib>vision_`, and its files into the bundle, which the app config's `vision`
entry describes. Checked with llvm-nm and the objects' own bytes against the artifact
`mlcx compile` writes for the same request (the tests' artifact cache: compiled once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlcx.artifact.encoder import EncoderConfig, read_encoder
from mlcx.compile.model import CompileRequest
from mlcx.kernels.step_params import EMBED_IMAGE, PREFILL_IMAGE
from mlcx.package.app_config import APP_CONFIG_FILE, AppConfig, AppModel
from mlcx.package.config import PackageConfig
from mlcx.targets.base import BuildOptions
from tests.support.cached_package import build_package
from tests.support.compile_cache import compile_model
from tests.support.tiny_models import TinySpec
from tests.targets.binaries import (
    EM_AARCH64,
    archive_members,
    blob_at,
    elf_header,
    elf_symbols,
    llvm,
    macho,
)

VISION = "gemma_vision_"  # the encoder's prefix: the model's ("gemma_") and "vision_"
URL = "https://example.com/gemma/"


def _package(device: str, layout: str, models: list[dict], tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp(f"vision_{device}") / "dist"
    config = {"device": device, "library": layout, "models": models}
    build_package(PackageConfig.from_dict(config, out), out)
    return out


@pytest.fixture(scope="module")
def iphone_dist(vision_folder, tiny_model, tmp_path_factory):
    """Combined: the Gemma (its compile is vision_app_dist's) beside test_package.py's text
    model."""
    models = [
        {"id": "gemma", "source": str(vision_folder), "quantization": "q0f32"},
        {"id": "tiny", "source": str(tiny_model(TinySpec())), "quantization": "q4f16"},
    ]
    return _package("iphone", "combined", models, tmp_path_factory)


@pytest.fixture(scope="module")
def android_dist(vision_folder, tmp_path_factory):
    """Per model, the weights downloaded."""
    model = {"id": "gemma", "source": str(vision_folder), "quantization": "q0f32",
             "bundle_weights": False, "weights_url": URL}  # fmt: skip
    return _package("android", "per-model", [model], tmp_path_factory)


@pytest.fixture(scope="module")
def compiled(vision_folder, tmp_path_factory):
    """device -> the artifact `mlcx compile` writes for the package's request of the Gemma."""

    artifacts: dict[str, Path] = {}

    def artifact(device: str) -> Path:
        if device not in artifacts:
            out = tmp_path_factory.mktemp(f"gemma_{device}") / "art"
            options = BuildOptions(system_lib_prefix="gemma_")
            request = CompileRequest(str(vision_folder), device, "q0f32", out, options=options)
            artifacts[device] = compile_model(request)
        return artifacts[device]

    return artifact


def _entries(dist: Path) -> tuple[dict[str, AppModel], dict[str, dict]]:
    """The app config's models, parsed and as raw JSON, by id."""
    text = (dist / "bundle" / APP_CONFIG_FILE).read_text()
    parsed = {m.id: m for m in AppConfig.from_json(text).models}
    return parsed, {m["id"]: m for m in json.loads(text)["models"]}


def _defined(path: Path) -> set[str]:
    return set(llvm("llvm-nm", "--defined-only", "-j", str(path)).split())


def test_iphone_archive_holds_the_encoder_beside_both_models(iphone_dist, compiled, tmp_path):
    archive = iphone_dist / "lib" / "libmlcx_models.a"
    members = {m.name: m for m in archive_members(archive, tmp_path)}
    prefixes = ("gemma_", VISION, "tiny_")
    assert set(members) == {f"{p}{o}" for p in prefixes for o in ("devc.o", "lib0.o")}
    assert {f"_{p}__tvm_ffi__library_bin" for p in prefixes} <= _defined(archive)
    devc = members[f"{VISION}devc.o"].read_bytes()
    assert macho(devc).platform == "ios"
    blob = blob_at(devc, macho(devc).symbols[f"_{VISION}__tvm_ffi__library_bin"])
    assert blob.kinds() == ["relax.VMExecutable", "_lib", "metal"]
    assert EMBED_IMAGE.encode() in blob.payload("relax.VMExecutable")
    # the objects as compiled into the artifact's vision/encoder-iphone.a
    encoder = compiled("iphone") / "vision" / "encoder-iphone.a"
    for member in archive_members(encoder, tmp_path / "artifact"):
        assert members[member.name].read_bytes() == member.read_bytes()
    model = members["gemma_devc.o"].read_bytes()
    text = blob_at(model, macho(model).symbols["_gemma___tvm_ffi__library_bin"])
    assert PREFILL_IMAGE.encode() in text.payload("relax.VMExecutable")


def test_iphone_bundle_holds_the_encoder_files(iphone_dist, compiled):
    artifact = compiled("iphone")
    vision, bundle = artifact / "vision", iphone_dist / "bundle" / "gemma" / "vision"
    shards = sorted(p.name for p in (vision / "params").iterdir())
    assert "index.json" in shards and any(n.endswith(".bin") for n in shards)
    assert sorted(p.name for p in (bundle / "params").iterdir()) == shards
    for name in shards:
        assert (bundle / "params" / name).read_bytes() == (vision / "params" / name).read_bytes()
    bundled = EncoderConfig.from_json((bundle / "encoder.json").read_text())
    want = read_encoder(artifact)
    assert want is not None and want.library == "encoder-iphone.a"
    assert bundled == EncoderConfig(**{**want.__dict__, "library": "lib/libmlcx_models.a"})


def test_iphone_app_config_describes_the_encoder(iphone_dist, compiled):
    models, raw = _entries(iphone_dist)
    gemma, bundle = models["gemma"], iphone_dist / "bundle"
    vision = gemma.vision
    assert vision is not None and vision.model_lib == VISION and gemma.model_lib == "gemma_"
    assert (vision.function, vision.prefill_function) == (EMBED_IMAGE, PREFILL_IMAGE)
    encoder = read_encoder(compiled("iphone"))
    assert encoder is not None
    assert (vision.inputs, vision.preprocess, vision.dtype) == (
        ("pixels",), encoder.preprocess, "float32"
    )  # fmt: skip
    assert (vision.image_token_id, vision.tokens_per_image) == (5, 4)
    assert vision.config == "gemma/vision/encoder.json" and (bundle / vision.config).is_file()
    assert vision.weights.index == "gemma/vision/params/index.json"
    assert vision.weights.bundled and vision.weights.url is None
    index = json.loads((bundle / vision.weights.index).read_text())
    assert vision.weights.bytes == sum(s["nbytes"] for s in index["shards"]) > 0
    assert gemma.estimated_memory_bytes > gemma.weights.bytes + vision.weights.bytes
    # the text model's entry keeps its format: no vision key
    assert models["tiny"].vision is None and "vision" not in raw["tiny"]
    assert not (bundle / "tiny" / "vision").exists()


def test_android_library_and_so_hold_the_encoder(android_dist, compiled, tmp_path):
    models, _ = _entries(android_dist)
    gemma = models["gemma"]
    assert gemma.library == "lib/libgemma.a" and gemma.shared_library == "lib/libgemma.so"
    archive = android_dist / gemma.library
    members = {m.name for m in archive_members(archive, tmp_path)}
    assert members == {f"{p}{o}" for p in ("gemma_", VISION) for o in ("devc.o", "lib0.o")}
    blobs = {f"{p}__tvm_ffi__library_bin" for p in ("gemma_", VISION)}
    assert blobs <= _defined(archive)
    shared = android_dist / gemma.shared_library
    data = shared.read_bytes()
    assert (elf_header(data).machine, elf_header(data).type) == (EM_AARCH64, "DYN")
    assert blobs <= set(llvm("llvm-nm", "-D", "--defined-only", "-j", str(shared)).split())
    blob = blob_at(data, elf_symbols(data)[f"{VISION}__tvm_ffi__library_bin"])
    assert "opencl" in blob.kinds()
    assert EMBED_IMAGE.encode() in blob.payload("relax.VMExecutable")
    kernels = (compiled("android") / "vision" / "encoder-android.cl").read_bytes()
    assert kernels in blob.payload("opencl")


def test_android_encoder_weights_are_downloaded(android_dist, compiled):
    vision = _entries(android_dist)[0]["gemma"].vision
    assert vision is not None and not vision.weights.bundled
    assert vision.weights.url == f"{URL}vision/"
    params = android_dist / "bundle" / "gemma" / "vision" / "params"
    assert [p.name for p in params.iterdir()] == ["index.json"]  # the index only, as the text's
    artifact_index = compiled("android") / "vision" / "params" / "index.json"
    assert (params / "index.json").read_bytes() == artifact_index.read_bytes()
    bundled = EncoderConfig.from_json((android_dist / "bundle" / vision.config).read_text())
    assert bundled.library == "lib/libgemma.a" and bundled.device == "android"
