"""Idefics3 (SmolVLM's architecture) with images against transformers on a tiny random
Idefics3ForConditionalGeneration (32x32 SigLIP tiles, pixel shuffle by 2, a 2-layer Llama) and
its processor with image splitting (longest edge to 64, whole 32-pixel tiles, row-major tiles
then the global image, Lanczos): pixels of every frame on PNG/JPEG files, image rows, prompt
layout against Idefics3Processor, every logit row of an image prompt and 32 greedy tokens, to
1e-4. Image tokens attend causally, as in transformers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from mlcx.compile.model import CompileRequest
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.vision.decode import read_image_file
from mlcx.runtime.vision.preprocess import frames
from tests.support.compile_cache import compile_model
from tests.support.tiny_idefics3 import FAKE, GLOBAL, IMAGE, TOKENS_PER_IMAGE, make_tiny_idefics3
from tests.vision.conftest import random_image
from tests.vision.test_gemma3_vision import TOL, _prompt_logits


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_idefics3(tmp_path_factory.mktemp("idefics3") / "hf")


@pytest.fixture(scope="module")
def llm(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("idefics3-art") / "art"
    request = CompileRequest(
        model=str(folder), quantization="q0f32", output=out, kv_dtype="float32"
    )
    return LLM(str(compile_model(request)), EngineConfig(kv_blocks=64))


@pytest.fixture(scope="module")
def reference(folder):
    from transformers import Idefics3ForConditionalGeneration

    return Idefics3ForConditionalGeneration.from_pretrained(folder, dtype="float32").eval()


def _processed(folder, image: Image.Image) -> dict:
    from transformers import Idefics3ImageProcessor

    return Idefics3ImageProcessor.from_pretrained(folder)(images=[image], return_tensors="pt")


def _messages(image):
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "image": image},
            ],
        }
    ]


@pytest.mark.parametrize(
    "name,fmt,size", [("wide.png", "PNG", (70, 33)), ("tall.jpg", "JPEG", (20, 50))]
)
def test_pixels_match_transformers(llm, folder, tmp_path, name, fmt, size):
    path = tmp_path / name
    random_image(5, size).save(path, fmt)
    got = np.stack(frames(read_image_file(path), llm.engine.images.config.preprocess))
    with Image.open(path) as image:
        want = _processed(folder, image)["pixel_values"][0].numpy()
    assert got.shape == want.shape and len(got) > 1  # tiles, then the global image
    assert np.abs(got - want).max() <= 1e-5


def test_image_rows_match_transformers(llm, folder, reference, photo):
    assert_image_rows_match_transformers(llm, folder, reference, photo)


def assert_image_rows_match_transformers(llm, folder, reference, photo):
    """The compiled encoder's rows for `photo` against transformers' image features, to TOL
    (shared with the mmproj test)."""
    out = _processed(folder, photo)
    with torch.no_grad():
        features = reference.model.get_image_features(
            out["pixel_values"], out["pixel_attention_mask"]
        )
    want = features.pooler_output if hasattr(features, "pooler_output") else features
    rows = llm.engine.images.encoder.encode(photo).rows
    assert np.abs(rows - np.asarray(want[0]).reshape(rows.shape)).max() <= TOL


def assert_layout_matches_idefics3_processor(llm, folder, photo):
    from transformers import Idefics3ImageProcessor, Idefics3Processor, PreTrainedTokenizerFast

    ids, _ = llm.chat_inputs(_messages(photo))
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    processor = Idefics3Processor(
        image_processor=Idefics3ImageProcessor.from_pretrained(folder),
        tokenizer=tokenizer,
        image_seq_len=TOKENS_PER_IMAGE,
    )
    text = "<|im_start|>user\nwhat is this?" + IMAGE + "<|im_end|>\n<|im_start|>assistant\n"
    want = processor(text=text, images=[photo])["input_ids"][0]
    assert ids == list(want)
    assert f"{FAKE}{GLOBAL}" in tokenizer.decode(ids)


def test_prompt_layout_matches_idefics3_processor(llm, folder, photo):
    assert_layout_matches_idefics3_processor(llm, folder, photo)


def test_logits_and_greedy_tokens_match_transformers(llm, folder, reference, photo):
    assert_logits_and_greedy_tokens_match_transformers(llm, folder, reference, photo)


def assert_logits_and_greedy_tokens_match_transformers(llm, folder, reference, photo):
    """Every logit row of an image prompt to TOL and 32 greedy tokens equal (shared with the
    mmproj test)."""
    ids, images = llm.chat_inputs(_messages(photo))
    out = _processed(folder, photo)
    inputs = dict(
        pixel_values=out["pixel_values"], pixel_attention_mask=out["pixel_attention_mask"]
    )
    with torch.no_grad():
        want = reference(torch.tensor([ids]), **inputs).logits[0].numpy()
        generated = reference.generate(
            torch.tensor([ids]),
            **inputs,
            max_new_tokens=32,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    assert np.abs(_prompt_logits(llm, ids, images) - want).max() <= TOL
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    assert completion.token_ids == generated[0, len(ids) :].tolist()
    assert len(set(completion.token_ids)) > 4


def test_a_smolvlm_folder(tmp_path, photo):
    """SmolVLMForConditionalGeneration: Idefics3's tensors and processor under other names;
    here without image splitting (one global tile an image)."""
    from tests.support.tiny_idefics3 import classes

    _, model_cls, processor_cls = classes("smolvlm")
    folder = make_tiny_idefics3(tmp_path / "hf", seed=43, kind="smolvlm", split=False)
    request = CompileRequest(
        model=str(folder), quantization="q0f32", output=tmp_path / "art", kv_dtype="float32"
    )
    llm = LLM(str(compile_model(request)), EngineConfig(kv_blocks=64))
    ids, images = llm.chat_inputs(_messages(photo))
    out = processor_cls.from_pretrained(folder)(images=[photo], return_tensors="pt")
    reference = model_cls.from_pretrained(folder, dtype="float32").eval()
    with torch.no_grad():
        generated = reference.generate(
            torch.tensor([ids]),
            pixel_values=out["pixel_values"],
            pixel_attention_mask=out["pixel_attention_mask"],
            max_new_tokens=16,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    params = SamplingParams.greedy(max_tokens=16, ignore_eos=True)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    assert completion.token_ids == generated[0, len(ids) :].tolist()
