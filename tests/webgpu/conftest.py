"""Fixtures for the WebGPU tests: a wgpu adapter (lavapipe here) and compiled plan artifacts."""

from __future__ import annotations

import pytest

from tests.support.tiny_models import TinySpec

SPEC = TinySpec()


@pytest.fixture(scope="session")
def adapter():
    """The wgpu adapter the runner would pick; skips when none exists."""
    wgpu = pytest.importorskip("wgpu", reason="pip install 'mlcx[web]' for the WebGPU runtime")
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
    from mlcx.compile import CompileRequest, compile_model
    from tests.support.tiny_gguf import write_tiny_gguf

    root = tmp_path_factory.mktemp("gguf")
    source = write_tiny_gguf(tiny_model(SPEC), root / "tiny.gguf")
    cache: dict = {}

    def build(target: str, quantization: str = "gguf"):
        key = (target, quantization)
        if key not in cache:
            out = root / f"{target}-{quantization}"
            cache[key] = compile_model(
                CompileRequest(str(source), target, quantization, output=out)
            )
        return cache[key]

    return build
