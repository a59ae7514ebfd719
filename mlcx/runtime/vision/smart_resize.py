"""Qwen-VL's dynamic resolution (transformers' smart_resize): an image keeps its aspect ratio
as closely as whole multiples of `factor` pixels a side allow, scaled into min_pixels ..
max_pixels. Python's round() (half to even) is part of the rule; web/src/image_smart_resize.js
follows it, and shared vectors hold the two equal."""

from __future__ import annotations

import math

from mlcx.artifact.encoder import Preprocess
from mlcx.errors import ImageError

MAX_RATIO = 200  # the processor refuses images more elongated than this


def smart_resize(height: int, width: int, factor: int, low: int, high: int) -> tuple[int, int]:
    """(height, width) after the resize."""
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ImageError(
            f"a {width}x{height} image is too elongated: the longer side may be at most "
            f"{MAX_RATIO} times the shorter"
        )
    h, w = round(height / factor) * factor, round(width / factor) * factor
    if h * w > high:
        beta = math.sqrt(height * width / high)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < low:
        beta = math.sqrt(low / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def smart_size(size: tuple[int, int], config: Preprocess) -> tuple[int, int]:
    """(width, height) of an image of PIL `size` (width, height) after the resize."""
    width, height = size
    h, w = smart_resize(height, width, config.size, config.min_pixels, config.max_pixels)
    return w, h


def merged_grid(size: tuple[int, int], config: Preprocess) -> tuple[int, int]:
    """(rows, columns) of merged tokens an image of PIL `size` becomes."""
    width, height = smart_size(size, config)
    return height // config.size, width // config.size
