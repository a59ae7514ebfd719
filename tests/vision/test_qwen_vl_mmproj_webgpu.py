"""Qwen2.5-VL and Qwen3-VL from llama.cpp's files (text GGUF + mmproj, test_qwen_vl_mmproj.py's
pair) compiled for webgpu (quantization `gguf`: the file's tensors, f32 math) and run by the
Python wgpu backend (lavapipe here): every logit row of an image prompt within 1e-4 of
transformers' (observed ~1.5e-7) and 32 greedy tokens equal, at two image sizes (one window,
windows cut by the image's edge)."""

from __future__ import annotations

import pytest

from mlcx.compile.model import CompileRequest
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from tests.support.compile_cache import compile_model
from tests.vision.conftest import random_image
from tests.vision.test_qwen_vl_mmproj import (  # noqa: F401 (fixtures)
    SIZES,
    folder,
    kind,
    logits_and_greedy_match,
    pair,
    reference,
)


@pytest.fixture(scope="module")
def llm(pair, kind, tmp_path_factory):  # noqa: F811
    wgpu = pytest.importorskip("wgpu")
    if not wgpu.gpu.enumerate_adapters_sync():
        pytest.skip("no wgpu adapter: run scripts/setup-system.sh (mesa-vulkan-drivers)")
    text, mmproj = pair
    out = tmp_path_factory.mktemp(f"{kind}-mmproj-webgpu") / "art"
    request = CompileRequest(str(text), "webgpu", "gguf", output=out, mmproj=mmproj)
    return LLM(str(compile_model(request)), EngineConfig(kv_blocks=64))


@pytest.mark.parametrize("size", SIZES)
def test_image_prompt_logits_and_greedy_tokens_match_transformers(
    llm,
    folder,  # noqa: F811
    reference,  # noqa: F811
    size,
):
    # test_qwen_vl_mmproj.py's image, tolerance and checks
    logits_and_greedy_match(llm, folder, reference, random_image(7, SIZES[size]))
