"""Fixtures for the WebGPU tests: a wgpu adapter (lavapipe here), compiled plan artifacts,
headless Chromium and `mlcx web` serving an artifact."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlcx.errors import ToolchainError
from tests.support.cli import mlcx_env
from tests.support.reference_pages import reference_pages
from tests.support.tiny_models import TinySpec

SPEC = TinySpec()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def adapter():
    """The wgpu adapter the runner would pick; skips when none exists."""
    import wgpu

    if not wgpu.gpu.enumerate_adapters_sync():
        pytest.skip("no wgpu adapter: run scripts/setup-system.sh (mesa-vulkan-drivers)")
    return wgpu.gpu.request_adapter_sync()


@pytest.fixture(scope="session")
def webgpu_artifact(compiled):
    """compiled(..., target="webgpu") with f32 activations unless told otherwise."""
    return lambda quantization="q0f32", spec=SPEC, **kw: compiled(
        spec, quantization, target="webgpu", **kw
    )


@pytest.fixture(scope="session")
def gguf_artifact(tmp_path_factory, tiny_model):
    """compile the tiny model's GGUF (Q8_0/Q4_x blocks, f16 scales) for `target`."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model
    from tests.support.tiny_gguf import write_tiny_gguf

    root = tmp_path_factory.mktemp("gguf")
    source = write_tiny_gguf(tiny_model(SPEC), root / "tiny.gguf")
    cache: dict = {}

    def build(target: str, quantization: str = "gguf"):
        key = (target, quantization)
        if key not in cache:
            out = root / f"{target}-{quantization}"
            cache[key] = compile_model(
                CompileRequest(
                    str(source), target, quantization, output=out, **reference_pages(target)
                )
            )
        return cache[key]

    return build


@pytest.fixture(scope="session")
def default_webgpu(tmp_path_factory):
    """The default model (SmolLM2-135M's Q4_1 GGUF) compiled for webgpu with f32 math, with
    the request `mlcx compile smollm2-135m --target webgpu -q gguf` makes (through the tests'
    artifact cache)."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model
    from tests.support.default_model import DEFAULT, default_gguf

    default_gguf()
    out = tmp_path_factory.mktemp("default-webgpu") / "smol-webgpu"
    return compile_model(CompileRequest(DEFAULT, "webgpu", "gguf", output=out))


def _setup(script: str) -> str | None:
    result = subprocess.run([str(ROOT / "scripts" / script)], capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stderr or result.stdout).strip()[-300:]


@pytest.fixture(scope="session")
def browser_ready():
    """Playwright, the system Chromium and web/node_modules; skips when they cannot be set up."""
    from mlcx.web.browser import chromium_path

    try:
        chromium_path()
    except ToolchainError:
        if error := _setup("setup-system.sh"):
            pytest.skip(f"Chromium missing and scripts/setup-system.sh failed: {error}")
    if error := _setup("setup-web.sh"):
        pytest.skip(f"scripts/setup-web.sh (npm ci) failed: {error}")


def start_mlcx_web(*artifacts: Path) -> tuple[subprocess.Popen, str]:
    """A real `mlcx web ARTIFACT... --port 0` and the URL it serves on."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlcx.cli.main", "web", *map(str, artifacts), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=mlcx_env(),
    )
    line = proc.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if match is None:
        proc.kill()
        pytest.fail(f"mlcx web printed {line!r}; stderr: {proc.stderr.read()}")
    return proc, match.group(0)


@pytest.fixture
def mlcx_web(browser_ready):
    """mlcx_web(artifact) -> the URL where a real `mlcx web ARTIFACT --port 0` serves it."""
    procs = []

    def start(artifact: Path) -> str:
        proc, url = start_mlcx_web(artifact)
        procs.append(proc)
        return url

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)
