"""Session fixtures of the vision tests: one tiny random Gemma 3 with images (written by
transformers), compiled for cpu once (and for webgpu, where a wgpu adapter is), its
transformers reference and test images."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.support.tiny_gemma3_vision import load_vision_reference, make_tiny_gemma3_vision
from tests.webgpu.conftest import browser_ready  # noqa: F401 (the browser tests' fixture)


@pytest.fixture(scope="session")
def vision_folder(tmp_path_factory):
    return make_tiny_gemma3_vision(tmp_path_factory.mktemp("gemma3_vision") / "hf")


@pytest.fixture(scope="session")
def vision_artifact(vision_folder, tmp_path_factory):
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    out = tmp_path_factory.mktemp("gemma3_vision_cpu") / "art"
    request = CompileRequest(
        model=str(vision_folder), quantization="q0f32", output=out, kv_dtype="float32"
    )
    return compile_model(request)


@pytest.fixture(scope="session")
def webgpu_vision(vision_folder, tmp_path_factory):
    """The same folder compiled for webgpu with f32 math (what SwiftShader and lavapipe run)."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    wgpu = pytest.importorskip("wgpu")
    if not wgpu.gpu.enumerate_adapters_sync():
        pytest.skip("no wgpu adapter: run scripts/setup-system.sh (mesa-vulkan-drivers)")
    out = tmp_path_factory.mktemp("gemma3_vision_webgpu") / "art"
    return compile_model(CompileRequest(str(vision_folder), "webgpu", "q0f32", output=out))


@pytest.fixture(scope="session")
def vision_reference(vision_folder):
    return load_vision_reference(vision_folder)


def random_image(seed: int, size=(48, 40)) -> Image.Image:
    """An RGB image that is not square (resizing shows) with every pixel drawn."""
    rng = np.random.RandomState(seed)
    return Image.fromarray(rng.randint(0, 256, (size[1], size[0], 3), dtype=np.uint8))


@pytest.fixture(scope="session")
def photo():
    return random_image(0)
