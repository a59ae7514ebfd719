"""Gemma 3 from a text GGUF plus llama.cpp's mmproj GGUF (`--mmproj`), both written by the
test from the tiny random Gemma3ForConditionalGeneration as llama.cpp's converter writes them:
image rows, image-prompt logits and 32 greedy tokens against transformers to 1e-4."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlcx.compile.model import CompileRequest, export_model
from mlcx.errors import UnsupportedModelError
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.compile_cache import compile_model
from tests.support.tiny_gemma3_vision import IMAGE_SIZE, TOKENS_PER_IMAGE
from tests.support.tiny_mmproj import write_gguf_pair
from tests.vision.test_gemma3_vision import TOL, _hf_inputs, _hf_pixels, _messages, _prompt_logits

POOL = int((IMAGE_SIZE // 8) / TOKENS_PER_IMAGE**0.5)


@pytest.fixture(scope="module")
def pair(vision_reference, vision_folder, tmp_path_factory):
    return write_gguf_pair(vision_reference, vision_folder, tmp_path_factory.mktemp("mmproj"), POOL)


@pytest.fixture(scope="module")
def llm(pair, tmp_path_factory):
    text, mmproj = pair
    out = tmp_path_factory.mktemp("mmproj-art") / "art"
    request = CompileRequest(model=str(text), output=out, kv_dtype="float32", mmproj=mmproj)
    return LLM(str(compile_model(request)), EngineConfig(kv_blocks=64))


def test_image_rows_match_transformers(llm, vision_folder, vision_reference, photo):
    rows = llm.engine.images.encoder.encode(photo).rows
    with torch.no_grad():
        pixels = _hf_pixels(vision_folder, photo)
        want = vision_reference.model.get_image_features(pixels).pooler_output[0].numpy()
    assert np.abs(rows - want).max() <= TOL


def test_logits_and_greedy_tokens_match_transformers(llm, vision_folder, vision_reference, photo):
    ids, images = llm.chat_inputs(_messages(photo))
    tokens, pixels, types = _hf_inputs(llm, vision_folder, ids, photo)
    with torch.no_grad():
        want = vision_reference(tokens, pixel_values=pixels, token_type_ids=types).logits[0]
        out = vision_reference.generate(
            tokens,
            pixel_values=pixels,
            token_type_ids=types,
            max_new_tokens=32,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    assert np.abs(_prompt_logits(llm, ids, images) - want.numpy()).max() <= TOL
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    assert completion.token_ids == out[0, len(ids) :].tolist()


def test_an_mmproj_for_another_text_model_is_refused(pair, tiny_model):
    request = CompileRequest(model=str(tiny_model()), mmproj=pair[1])  # a tiny Llama
    with pytest.raises(UnsupportedModelError, match="type 'gemma3' goes with a gemma3 text model"):
        export_model(request)
