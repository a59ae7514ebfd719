"""Qwen2.5-VL and Qwen3-VL from llama.cpp's files (text GGUF + mmproj, test_qwen_vl_mmproj.py's
pair) compiled for webgpu (quantization `gguf`: the file's tensors, f32 math) and run by the
Python wgpu backend (lavapipe here): every logit row of an image prompt within 1e-4 of
transformers' (observed ~1.5e-7) and 32 greedy tokens equal, at two image sizes (one window,
windows cut by the image's edge)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlcx.compile.model import CompileRequest
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.compile_cache import compile_model
from tests.vision.conftest import random_image
from tests.vision.test_qwen_vl import _hf, _messages, _prompt_logits
from tests.vision.test_qwen_vl_mmproj import SIZES, folder, kind, pair, reference  # noqa: F401

TOL = 1e-4


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
    image = random_image(7, SIZES[size])  # test_qwen_vl_mmproj.py's
    ids, images = llm.chat_inputs(_messages(image))
    inputs = _hf(llm, folder, ids, [image])
    with torch.no_grad():
        want = reference(**inputs).logits[0].numpy()
        out = reference.generate(
            **inputs, max_new_tokens=32, do_sample=False, eos_token_id=None, pad_token_id=0
        )
    assert np.abs(_prompt_logits(llm, ids, images) - want).max() <= TOL
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    assert completion.token_ids == out[0, len(ids) :].tolist()
    assert len(set(completion.token_ids)) > 1  # not one token repeated (as the cpu test)
