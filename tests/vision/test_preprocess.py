"""Image files -> pixels from the model's own preprocessor_config.json (numpy + Pillow),
against transformers' Gemma 3 image processor on PNG and JPEG files the test writes; and the
image-token layout of a chat prompt against transformers' Gemma3Processor."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from mlcx.artifact.encoder import read_encoder
from mlcx.runtime.text.prompt_encoder import PromptEncoder
from mlcx.runtime.text.tokenizer import Tokenizer
from mlcx.runtime.vision.decode import decode_image
from mlcx.runtime.vision.preprocess import pixels
from mlcx.runtime.vision.prompt import chat_with_images
from tests.support.tiny_gemma3_vision import BOI, EOI, IMAGE, TOKENS_PER_IMAGE
from tests.vision.conftest import random_image

FILES = {
    "rgb.png": ("PNG", "RGB", (50, 37)),
    "rgba.png": ("PNG", "RGBA", (31, 64)),
    "photo.jpg": ("JPEG", "RGB", (64, 48)),
    "gray.jpg": ("JPEG", "L", (20, 20)),
}


def _hf_processor(folder):
    from transformers import Gemma3ImageProcessor

    return Gemma3ImageProcessor.from_pretrained(folder)


@pytest.mark.parametrize("name", sorted(FILES))
def test_pixels_match_transformers(name, tmp_path, vision_folder, vision_artifact):
    fmt, mode, size = FILES[name]
    path = tmp_path / name
    random_image(len(name), size).convert(mode).save(path, fmt)
    config = read_encoder(vision_artifact).preprocess
    got = pixels(decode_image(path.read_bytes(), name), config)
    with Image.open(path) as image:
        want = _hf_processor(vision_folder)(images=[image], return_tensors="np")["pixel_values"]
    assert got.shape == (3, 32, 32)
    assert np.abs(got - want[0]).max() <= 1e-5


def test_preprocessing_comes_from_the_model_config(vision_artifact):
    config = read_encoder(vision_artifact).preprocess
    assert (config.size, config.mean, config.std, config.resample) == (
        32,
        (0.5,) * 3,
        (0.5,) * 3,
        2,
    )


def test_image_layout_matches_gemma3_processor(vision_folder, vision_artifact, photo):
    from transformers import Gemma3Processor, PreTrainedTokenizerFast

    prompts = PromptEncoder(Tokenizer.from_dir(vision_artifact))
    parts = [{"type": "text", "text": "hi"}, {"type": "image", "image": photo}]
    messages = [{"role": "user", "content": [*parts, {"type": "text", "text": " there"}]}]
    ids, images = chat_with_images(prompts, read_encoder(vision_artifact), messages)
    specials = {"boi_token": BOI, "eoi_token": EOI, "image_token": IMAGE}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(vision_folder / "tokenizer.json"), extra_special_tokens=specials
    )
    processor = Gemma3Processor(
        image_processor=_hf_processor(vision_folder),
        tokenizer=tokenizer,
        image_seq_length=TOKENS_PER_IMAGE,
    )
    text = prompts.chat_template.render(
        [
            {
                "role": "user",
                "content": [*parts[:1], {"type": "image"}, parts[0] | {"text": " there"}],
            }
        ]
    )
    want = processor(text=text, images=[photo])["input_ids"][0]
    assert images == [photo]
    assert ids == list(want)
