"""Qwen-VL vectors for the browser runtime (web/test/vectors/qwen_vl.json), from the Python
runtime: smart_resize (Python's half-to-even round included), random images through
mlcx.runtime.vision.preprocess (Pillow's bicubic resize to the image's own size, CLIP
normalization) with their prompt layout (text, runs, merged grid) and embed_image's inputs
(runtime.vision.qwen_inputs: merge order, windows, position-grid taps), and M-RoPE positions
(runtime.core.rope_positions) of prompts with images. web/test/qwen_vl.test.mjs holds
web/src's versions to them bit for bit."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import asdict, replace

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import EncoderConfig, Preprocess
from mlcx.frontends.qwen_vision.config import VisionConfig
from mlcx.frontends.qwen_vision.inputs import PATCHES, input_names
from mlcx.runtime.core.images import PromptImage
from mlcx.runtime.core.rope_positions import token_positions
from mlcx.runtime.vision.layout import image_layout
from mlcx.runtime.vision.preprocess import frames
from mlcx.runtime.vision.qwen_inputs import qwen_inputs
from mlcx.runtime.vision.smart_resize import smart_resize

# (height, width, factor, min_pixels, max_pixels): halves (70 / 28 = 2.5), both bounds
RESIZES = [
    (70, 98, 28, 56 * 56, 112 * 112),
    (40, 60, 28, 56 * 56, 112 * 112),
    (100, 150, 28, 56 * 56, 112 * 112),
    (300, 20, 28, 56 * 56, 112 * 112),
    (80, 48, 32, 64 * 64, 128 * 128),
    (1000, 700, 28, 56 * 56, 1280 * 28 * 28),
]
_VISION = dict(
    temporal_patch_size=2,
    merge_size=2,
    hidden_size=32,
    intermediate_size=64,
    num_layers=2,
    num_heads=2,
    text_hidden_size=64,
    image_token_id=5,
)
CLIP = {"mean": (0.48145466, 0.4578275, 0.40821073), "std": (0.26862954, 0.26130258, 0.27577711)}
# family -> (VisionConfig, Preprocess) as the tiny models' (tests/support/tiny_qwen_vl.py)
FAMILIES = {
    "qwen2_5_vl": (
        VisionConfig(patch_size=14, window_size=56, full_layers=(1,), **_VISION),
        Preprocess(size=28, resample=3, min_pixels=56 * 56, max_pixels=112 * 112, **CLIP),
    ),
    "qwen3_vl": (
        VisionConfig(patch_size=16, norm="layer", position_grid=4, **_VISION),
        Preprocess(size=32, resample=3, min_pixels=64 * 64, max_pixels=128 * 128),
    ),
}
# family -> (width, height) of its images: Qwen2.5-VL's 150x100 has windows cut by its edge
SIZES = {"qwen2_5_vl": [(60, 40), (150, 100)], "qwen3_vl": [(60, 40), (33, 71)]}
# prompts: (length, [(start, rows, cols)] of its images), positions asked from `first`
PROMPTS = [(30, [(4, 2, 3)], 0), (40, [(3, 3, 4), (20, 2, 2)], 5), (12, [], 0)]


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()


def _input(name: str, array: np.ndarray) -> dict:
    """The patches (the frame's bytes again, reordered) by their sha256, to keep the file small."""
    if name == PATCHES:
        return {"shape": list(array.shape), "sha256": hashlib.sha256(array.tobytes()).hexdigest()}
    return {"shape": list(array.shape), "data": _b64(array)}


def _image_case(seed: int, family: str, size: tuple[int, int]) -> dict:
    vision, preprocess = FAMILIES[family]
    width, height = size
    rgb = np.random.RandomState(seed).randint(0, 256, (height, width, 3), dtype=np.uint8)
    image = Image.fromarray(rgb)
    config = EncoderConfig(
        family, vision.to_dict(), "", preprocess, "webgpu", 5, 0, False, "<p>", "<p>"
    )
    config = replace(config, inputs=input_names(vision))
    layout = image_layout(config, image)
    [frame] = frames(image, preprocess)
    inputs = qwen_inputs(frame, vision)
    return {
        "width": width,
        "height": height,
        "rgb": _b64(rgb),
        "config": {k: v for k, v in asdict(config).items() if k != "extra"},
        "frame": {"shape": list(frame.shape), "data": _b64(frame)},
        "layout": {"text": layout.text, "runs": list(layout.runs), "grid": list(layout.grid)},
        "inputs": {n: _input(n, a) for n, a in inputs.items()},
    }


def _positions(length: int, images: list[tuple[int, int, int]], first: int) -> dict:
    prompt = [
        PromptImage(start, np.zeros((rows * cols, 1), np.float32), b"", (rows, cols))
        for start, rows, cols in images
    ]
    return {
        "first": first,
        "count": length - first,
        "images": [{"start": im.start, "end": im.end, "grid": list(im.grid)} for im in prompt],
        "positions": token_positions(first, length - first, prompt).tolist(),
    }


def qwen_vectors() -> dict:
    cases = [(family, size) for family, sizes in SIZES.items() for size in sizes]
    return {
        "resize": [{"args": list(args), "want": list(smart_resize(*args))} for args in RESIZES],
        "images": {
            f"{family} {w}x{h}": _image_case(i, family, (w, h))
            for i, (family, (w, h)) in enumerate(cases)
        },
        "positions": [_positions(*prompt) for prompt in PROMPTS],
    }
