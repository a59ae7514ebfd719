"""An image -> the encoder's pixels, as the model's own preprocessor config says: resize (for
Idefics3 first its longest edge, keeping the aspect ratio, then to the tile), rescale,
normalize per channel, channels first."""

from __future__ import annotations

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import Preprocess

MAX_SIDE = 4096  # Idefics3's bound on either side after the first resize


def pixels(image: Image.Image, config: Preprocess) -> np.ndarray:
    """float32 [3, size, size]."""
    rgb = image.convert("RGB")
    resample = Image.Resampling(config.resample)
    if config.longest_edge:
        rgb = rgb.resize(longest_edge_size(rgb.size, config.longest_edge), resample=resample)
    resized = rgb.resize((config.size, config.size), resample=resample)
    # transformers rescales and normalizes in float64 over the uint8 values, then casts
    array = np.asarray(resized, dtype=np.float64) * config.rescale
    array = (array - np.array(config.mean)) / np.array(config.std)
    return np.ascontiguousarray(array.transpose(2, 0, 1), dtype=np.float32)


def longest_edge_size(size: tuple[int, int], longest: int) -> tuple[int, int]:
    """(width, height) with the longest edge at `longest`, the other even (Idefics3's rule),
    both at most MAX_SIDE."""
    width, height = size
    ratio = width / height
    if width >= height:
        width, height = longest, int(longest / ratio)
        height += height % 2
    else:
        height, width = longest, int(longest * ratio)
        width += width % 2
    if max(width, height) > MAX_SIDE:
        if width >= height:
            width, height = MAX_SIDE, int(MAX_SIDE / ratio)
        else:
            height, width = MAX_SIDE, int(MAX_SIDE * ratio)
    return max(width, 1), max(height, 1)
