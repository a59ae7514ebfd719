"""How an image sits in a prompt, by encoder family: the text that replaces the marker the
chat template wrote, the runs of image tokens it holds (one per frame the encoder takes) and,
for dynamic resolution, the image's grid of merged tokens (M-RoPE's positions).

- Gemma 3: one fixed sequence (EncoderConfig.image_text);
- Idefics3: by the image's grid of tiles, as Idefics3Processor writes it (a row of
  <fake_token_around_image><row_r_col_c> + tokens per tile row, a blank line, then the global
  image's sequence);
- Qwen-VL: one <|image_pad|> per merged token of the image at its own resolution."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

from mlcx.artifact.encoder import EncoderConfig
from mlcx.frontends.idefics3_vision.layout import FAKE, GLOBAL
from mlcx.runtime.vision.preprocess import grid
from mlcx.runtime.vision.smart_resize import merged_grid

Grid = tuple[int, int]


@dataclass(frozen=True)
class ImageLayout:
    text: str  # the prompt text in place of the image's marker
    runs: tuple[int, ...]  # tokens of each run of image tokens, in order (a frame each)
    grid: Grid | None = None  # (rows, columns) of merged tokens (dynamic resolution)


def _fixed(config: EncoderConfig, image: Image.Image) -> ImageLayout:
    return ImageLayout(config.image_text, (config.tokens_per_image,))


def _tiles(config: EncoderConfig, image: Image.Image) -> ImageLayout:
    rows, cols = grid(image, config.preprocess)
    n = config.tokens_per_image
    tokens = config.image_marker * n
    if not rows:
        return ImageLayout(config.image_text, (n,))
    text = ""
    for r in range(rows):
        text += "".join(f"{FAKE}<row_{r + 1}_col_{c + 1}>{tokens}" for c in range(cols)) + "\n"
    return ImageLayout(f"{text}\n{FAKE}{GLOBAL}{tokens}{FAKE}", (n,) * (rows * cols + 1))


def _dynamic(config: EncoderConfig, image: Image.Image) -> ImageLayout:
    rows, cols = merged_grid(image.size, config.preprocess)
    return ImageLayout(config.image_text * (rows * cols), (rows * cols,), (rows, cols))


LAYOUTS: dict[str, Callable[[EncoderConfig, Image.Image], ImageLayout]] = {
    "gemma3": _fixed,
    "idefics3": _tiles,
    "qwen2_5_vl": _dynamic,
    "qwen3_vl": _dynamic,
}


def image_layout(config: EncoderConfig, image: Image.Image) -> ImageLayout:
    return LAYOUTS[config.family](config, image)
