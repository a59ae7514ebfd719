"""Idefics3's image splitting: after the longest-edge resize, the image is resized to whole
tiles (multiples of the tile side, keeping the aspect ratio as its processor rounds it), cut
into rows x columns of tiles in row-major order, and followed by the whole image resized to
one tile (the global image). An image that is one tile already is just the global image."""

from __future__ import annotations

import math

from PIL import Image


def tile_size(size: tuple[int, int], tile: int) -> tuple[int, int]:
    """(width, height) in whole tiles, as Idefics3's resize_for_vision_encoder computes it."""
    width, height = size
    ratio = width / height
    if width >= height:
        width = math.ceil(width / tile) * tile
        height = math.ceil(int(width / ratio) / tile) * tile
    else:
        height = math.ceil(height / tile) * tile
        width = math.ceil(int(height * ratio) / tile) * tile
    return width, height


def grid(size: tuple[int, int], tile: int) -> tuple[int, int]:
    """(rows, columns) of tiles of an image of `size` after tile_size; (0, 0): one tile."""
    width, height = tile_size(size, tile)
    if width <= tile and height <= tile:
        return 0, 0
    return height // tile, width // tile


def split(image: Image.Image, tile: int, resample) -> list[Image.Image]:
    """The tiles in row-major order, then the global image (or the global image alone)."""
    whole = image.resize(tile_size(image.size, tile), resample=resample)
    rows, cols = grid(image.size, tile)
    crops = [
        whole.crop((c * tile, r * tile, (c + 1) * tile, (r + 1) * tile))
        for r in range(rows)
        for c in range(cols)
    ]
    if not crops:
        return [whole]
    return [*crops, whole.resize((tile, tile), resample=resample)]
