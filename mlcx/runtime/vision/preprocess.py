"""An image -> the encoder's pixels, as the model's own preprocessor config says: resize (for
Idefics3 first its longest edge, keeping the aspect ratio, then to the tile, or into tiles and
a global image: runtime.vision.tiles; for Qwen-VL to whole merged patches within its pixel
bounds: runtime.vision.smart_resize), rescale, normalize per channel, channels first."""

from __future__ import annotations

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import Preprocess
from mlcx.runtime.vision import tiles
from mlcx.runtime.vision.smart_resize import smart_size

MAX_SIDE = 4096  # Idefics3's bound on either side after the first resize


def frames(image: Image.Image, config: Preprocess) -> list[np.ndarray]:
    """float32 [3, size, size] of each frame the encoder takes (one, or tiles + global); with
    dynamic resolution one frame [3, height, width] of the image's own size."""
    rgb = _resized(image, config)
    resample = Image.Resampling(config.resample)
    if config.dynamic:
        return [_normalized(rgb.resize(smart_size(rgb.size, config), resample=resample), config)]
    if config.split:
        return [_normalized(tile, config) for tile in tiles.split(rgb, config.size, resample)]
    return [_normalized(rgb.resize((config.size, config.size), resample=resample), config)]


def pixels(image: Image.Image, config: Preprocess) -> np.ndarray:
    """The first frame: float32 [3, size, size] (the only one without image splitting)."""
    return frames(image, config)[0]


def grid(image: Image.Image, config: Preprocess) -> tuple[int, int]:
    """(rows, columns) of tiles the image becomes; (0, 0): one frame."""
    if not config.split:
        return 0, 0
    return tiles.grid(_resized_size(image.size, config), config.size)


def _resized_size(size: tuple[int, int], config: Preprocess) -> tuple[int, int]:
    return longest_edge_size(size, config.longest_edge) if config.longest_edge else size


def _resized(image: Image.Image, config: Preprocess) -> Image.Image:
    rgb = image.convert("RGB")
    if not config.longest_edge:
        return rgb
    size = _resized_size(rgb.size, config)
    return rgb.resize(size, resample=Image.Resampling(config.resample))


def _normalized(image: Image.Image, config: Preprocess) -> np.ndarray:
    # transformers rescales and normalizes in float64 over the uint8 values, then casts
    array = np.asarray(image, dtype=np.float64) * config.rescale
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
