"""The prompt text each image becomes, by encoder family: Gemma 3's is one fixed sequence
(EncoderConfig.image_text); Idefics3's depends on the image's grid of tiles, as
Idefics3Processor writes it (a row of <fake_token_around_image><row_r_col_c> + tokens per tile
row, a blank line, then the global image's sequence)."""

from __future__ import annotations

from collections.abc import Callable

from mlcx.artifact.encoder import EncoderConfig
from mlcx.frontends.idefics3_vision.layout import FAKE, GLOBAL

Grid = tuple[int, int]


def _fixed(config: EncoderConfig, grid: Grid) -> str:
    return config.image_text


def _tiles(config: EncoderConfig, grid: Grid) -> str:
    rows, cols = grid
    tokens = config.image_marker * config.tokens_per_image
    if not rows:
        return config.image_text
    text = ""
    for r in range(rows):
        text += "".join(f"{FAKE}<row_{r + 1}_col_{c + 1}>{tokens}" for c in range(cols)) + "\n"
    return f"{text}\n{FAKE}{GLOBAL}{tokens}{FAKE}"


LAYOUTS: dict[str, Callable[[EncoderConfig, Grid], str]] = {"gemma3": _fixed, "idefics3": _tiles}


def image_text(config: EncoderConfig, grid: Grid) -> str:
    return LAYOUTS[config.family](config, grid)


def runs_of(grid: Grid) -> int:
    """Runs of image tokens an image of this grid puts in the prompt (a tile each + global)."""
    rows, cols = grid
    return rows * cols + 1 if rows else 1
