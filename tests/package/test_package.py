"""`mlcx package`: two tiny models for an iPhone app (one combined archive, through the CLI)
and for an Android app (one library per model), checked file by file and symbol by symbol.
Both build in this process with their compiles through the tests' artifact cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlcx.artifact.config import CONFIG_FILE, ArtifactConfig
from mlcx.package.app_config import APP_CONFIG_FILE, AppConfig
from mlcx.package.config import PackageConfig
from tests.support.cached_package import build_package, package_cli
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

# "tiny" is app_dist's model (tests/package/conftest.py): one iPhone compile serves both; no
# prefix is a substring of the other's (the Android test looks for the other's symbols)
SPECS = {"tiny": TinySpec(), "small-qwen": TinySpec(arch="qwen2", seed=1)}
PREFIXES = {"tiny": "tiny_", "small-qwen": "small_qwen_"}


def _config(device: str, library: str, models: dict[str, Path]) -> dict:
    llama, qwen = models["tiny"], models["small-qwen"]
    return {
        "device": device,
        "library": library,
        "models": [
            {"id": "tiny", "source": str(llama), "quantization": "q4f16",
             "bundle_weights": True, "estimated_memory_bytes": 4e6},
            {"id": "small-qwen", "source": str(qwen), "bundle_weights": False,
             "weights_url": "https://example.com/small-qwen/"},
        ],
    }  # fmt: skip


@pytest.fixture(scope="module")
def sources(tiny_model):
    return {model_id: tiny_model(spec) for model_id, spec in SPECS.items()}


@pytest.fixture(scope="module")
def iphone_dist(sources, tmp_path_factory):
    folder = tmp_path_factory.mktemp("iphone")
    (folder / "package.json").write_text(json.dumps(_config("iphone", "combined", sources)))
    package_cli(str(folder / "package.json"), "-o", str(folder / "dist"))
    return folder / "dist"


@pytest.fixture(scope="module")
def android_dist(sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("android") / "dist"
    build_package(PackageConfig.from_dict(_config("android", "per-model", sources), out), out)
    return out


def _app(dist: Path) -> AppConfig:
    return AppConfig.from_json((dist / "bundle" / APP_CONFIG_FILE).read_text())


def _files(dist: Path) -> set[str]:
    return {p.relative_to(dist).as_posix() for p in dist.rglob("*") if p.is_file()}


def test_iphone_layout(iphone_dist):
    assert _files(iphone_dist) == {
        "lib/libmlcx_models.a",
        "bundle/mlcx-app-config.json",
        *(f"bundle/tiny/{f}" for f in ("mlcx-config.json", "tokenizer.json",
          "mlcx-tokenizer.json", "params/index.json", "params/shard-00000.bin")),
        *(f"bundle/small-qwen/{f}" for f in ("mlcx-config.json", "tokenizer.json",
          "mlcx-tokenizer.json", "params/index.json")),
    }  # fmt: skip


def test_iphone_combined_archive_holds_both_models(iphone_dist, tmp_path):
    app = _app(iphone_dist)
    assert app.libraries == ("lib/libmlcx_models.a",)
    members = {m.name: m for m in archive_members(iphone_dist / app.libraries[0], tmp_path)}
    assert set(members) == {f"{p}{o}" for p in PREFIXES.values() for o in ("devc.o", "lib0.o")}
    for model in app.models:
        assert model.model_lib == PREFIXES[model.id] and model.device == "metal"
        devc = members[f"{model.model_lib}devc.o"].read_bytes()
        info = macho(devc)
        assert info.platform == "ios"
        blob = blob_at(devc, info.symbols[f"_{model.model_lib}__tvm_ffi__library_bin"])
        assert blob.kinds() == ["relax.VMExecutable", "_lib", "metal"]
        for entry in model.entry_functions:  # the VM functions the app calls
            assert entry.encode() in blob.payload("relax.VMExecutable")


def test_app_config_points_at_each_models_files(iphone_dist):
    bundle = iphone_dist / "bundle"
    by_id = {m.id: m for m in _app(iphone_dist).models}
    llama, qwen = by_id["tiny"], by_id["small-qwen"]
    assert llama.weights.bundled and not qwen.weights.bundled
    assert qwen.weights.url == "https://example.com/small-qwen/"
    assert llama.estimated_memory_bytes == 4_000_000
    assert qwen.estimated_memory_bytes > qwen.weights.bytes  # weights + a full KV cache
    for model in by_id.values():
        for rel in (model.config, model.tokenizer, model.tokenizer_config, model.weights.index):
            assert (bundle / rel).is_file()
        config = ArtifactConfig.from_json((bundle / model.config).read_text())
        assert config.library == model.library and config.runtime == "app"
        index = json.loads((bundle / model.weights.index).read_text())
        assert model.weights.bytes == sum(s["nbytes"] for s in index["shards"])
        assert (bundle / model.bundle_dir / CONFIG_FILE).is_file()


def test_text_models_have_no_vision_entry(iphone_dist, android_dist):
    """Text-only packages keep the format they had before models with images were packaged
    (test_package_vision.py): no vision key, no vision/ folder."""
    for dist in (iphone_dist, android_dist):
        raw = json.loads((dist / "bundle" / APP_CONFIG_FILE).read_text())
        assert all("vision" not in model for model in raw["models"])
        assert all(model.vision is None for model in _app(dist).models)
        assert not list((dist / "bundle").rglob("vision"))


def test_android_per_model_libraries(android_dist):
    app = _app(android_dist)
    assert app.library_layout == "per-model"
    assert set(app.libraries) == {f"lib/lib{m}.{ext}" for m in SPECS for ext in ("a", "so")}
    for model in app.models:
        assert model.device == "opencl" and model.shared_library
        shared = android_dist / model.shared_library
        data = shared.read_bytes()
        assert (elf_header(data).machine, elf_header(data).type) == (EM_AARCH64, "DYN")
        assert f"lib{model.id}.so" in llvm("llvm-readelf", "-d", str(shared))  # SONAME
        blob = blob_at(data, elf_symbols(data)[f"{model.model_lib}__tvm_ffi__library_bin"])
        assert "opencl" in blob.kinds()
        other = next(p for m, p in PREFIXES.items() if m != model.id)
        assert not any(other in s for s in elf_symbols(data))


def test_bad_configs_name_the_problem(tmp_path):
    cases = {
        "device": ({"device": "cpu", "models": [{"id": "a", "source": "x"}]}, "cannot be packaged"),
        "dup": ({"device": "iphone", "models": [{"id": "a-b", "source": "x"},
                 {"id": "a_b", "source": "y"}]}, "unique"),
        "key": ({"device": "android", "models": [{"id": "a", "source": "x", "bundle": 1}]},
                "unknown keys"),
        "encoder": ({"device": "iphone", "models": [{"id": "a", "source": "x"},
                     {"id": "a-vision", "source": "y"}]}, "image encoder's of 'a'"),
    }  # fmt: skip
    for config, message in cases.values():
        with pytest.raises(ValueError, match=message):
            PackageConfig.from_dict(config, tmp_path)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="cannot read package config"):
        PackageConfig.read(tmp_path / "bad.json")
