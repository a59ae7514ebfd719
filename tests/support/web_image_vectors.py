"""Image preprocessing vectors for the browser runtime (web/test/vectors/images.json): random
RGB images, each through mlcx.runtime.vision.preprocess (Pillow's resize, then rescale and
normalize) under one of several preprocessor settings, with every frame's float32 pixels and
the prompt text of the image's layout. web/test/images.test.mjs holds web/src's resize and
preprocessing to them bit for bit."""

from __future__ import annotations

import base64
from dataclasses import asdict

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import EncoderConfig, Preprocess
from mlcx.runtime.vision.layout import image_layout
from mlcx.runtime.vision.preprocess import frames, grid

_IMAGENET = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}
# name -> (width, height, Preprocess, family)
CASES = {
    "gemma3 downscale bilinear": (48, 40, Preprocess(size=32), "gemma3"),
    "gemma3 upscale bilinear": (20, 13, Preprocess(size=32), "gemma3"),
    "same size is a copy": (16, 16, Preprocess(size=16), "gemma3"),
    "tall, bicubic, imagenet": (7, 50, Preprocess(size=16, resample=3, **_IMAGENET), "gemma3"),
    "lanczos": (45, 30, Preprocess(size=16, resample=1), "gemma3"),
    "box": (33, 21, Preprocess(size=16, resample=4), "gemma3"),
    "hamming": (21, 33, Preprocess(size=16, resample=5), "gemma3"),
    "idefics3 longest edge, one tile": (
        30,
        20,
        Preprocess(size=16, longest_edge=16, resample=1, rescale=1 / 255),
        "idefics3",
    ),
    "idefics3 tiles and the global image": (
        50,
        29,
        Preprocess(size=16, longest_edge=40, split=True, resample=1),
        "idefics3",
    ),
    "idefics3 tall tiles": (19, 47, Preprocess(size=16, longest_edge=32, split=True), "idefics3"),
}
_TEXT = {  # what compile_encoder records for each family's tiny tokenizer
    "gemma3": (
        "<start_of_image>",
        "\n\n<start_of_image>" + "<image_soft_token>" * 4 + "<end_of_image>\n\n",
    ),
    "idefics3": (
        "<image>",
        "<fake_token_around_image><global-img>" + "<image>" * 4 + "<fake_token_around_image>",
    ),
}


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()


def _config(family: str, preprocess: Preprocess) -> EncoderConfig:
    marker, text = _TEXT[family]
    return EncoderConfig(
        family, {}, "", preprocess, "webgpu", 0, 4, family == "gemma3", marker, text
    )


def _case(seed: int, width: int, height: int, preprocess: Preprocess, family: str) -> dict:
    rgb = np.random.RandomState(seed).randint(0, 256, (height, width, 3), dtype=np.uint8)
    image = Image.fromarray(rgb)
    config = _config(family, preprocess)
    return {
        "width": width,
        "height": height,
        "rgb": _b64(rgb),
        "config": {**{k: v for k, v in asdict(config).items() if k != "extra"}},
        "grid": list(grid(image, preprocess)),
        "frames": [_b64(f) for f in frames(image, preprocess)],
        "text": image_layout(config, image).text,
    }


def image_vectors() -> dict:
    return {name: _case(i, *case) for i, (name, case) in enumerate(CASES.items())}
