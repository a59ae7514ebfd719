"""The package produced by `mlcx package --app both` for the app tests, and the browser
fixtures of the WebGPU tests for their WebView stand-in."""

from __future__ import annotations

import json

import pytest

from tests.support.cached_package import package_cli
from tests.support.tiny_models import TinySpec
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
