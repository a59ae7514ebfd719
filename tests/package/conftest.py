"""The packages produced by `mlcx package --app both` for the app tests (a text model, and the
vision tests' tiny Gemma 3 with images), and the browser fixtures of the WebGPU tests for their
WebView stand-in."""

from __future__ import annotations

import json

import pytest

from tests.support.cached_package import package_cli
from tests.support.tiny_models import TinySpec
from tests.vision.conftest import photo, vision_artifact, vision_folder, webgpu_vision  # noqa: F401
from tests.webgpu.conftest import _setup, browser_ready  # noqa: F401


@pytest.fixture(scope="session")
def app_dist(tiny_model, tmp_path_factory):
    """`mlcx package --app both` (the CLI, in this process: its three compiles go through the
    tests' artifact cache, the two webgpu ones being test_plan.py's)."""
    if error := _setup("setup-web.sh"):
        pytest.skip(f"dist/www copies web/node_modules; scripts/setup-web.sh failed: {error}")
    folder = tmp_path_factory.mktemp("app")
    package = {
        "device": "iphone",
        "app": {"name": "Tiny Chat", "id": "org.example.tinychat"},
        "models": [{"id": "tiny", "source": str(tiny_model(TinySpec())), "quantization": "q4f16",
                    "fallback_quantization": "q4f32"}],
    }  # fmt: skip
    (folder / "package.json").write_text(json.dumps(package))
    out = folder / "dist"
    package_cli(str(folder / "package.json"), "--app", "both", "-o", str(out))
    return out


@pytest.fixture(scope="session")
def vision_app_dist(vision_folder, webgpu_vision, tmp_path_factory):  # noqa: F811
    """`mlcx package --app both` of the tiny Gemma 3 with images in q0f32 (f32 math: what
    SwiftShader runs): its webgpu compile is test_web_vision.py's (webgpu_vision), so only the
    phone compile is its own."""
    if error := _setup("setup-web.sh"):
        pytest.skip(f"dist/www copies web/node_modules; scripts/setup-web.sh failed: {error}")
    folder = tmp_path_factory.mktemp("vision_app")
    model = {"id": "gemma", "source": str(vision_folder), "quantization": "q0f32"}
    (folder / "package.json").write_text(json.dumps({"device": "iphone", "models": [model]}))
    out = folder / "dist"
    package_cli(str(folder / "package.json"), "--app", "both", "-o", str(out))
    return out
