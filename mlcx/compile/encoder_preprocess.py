"""How an image encoder's images are preprocessed (artifact.encoder.Preprocess), read from the
model's preprocessor_config.json: a fixed square (Gemma 3), a longest edge and tiles
(Idefics3), or Qwen-VL's dynamic resolution (smart_resize within min/max pixels)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mlcx.artifact.encoder import Preprocess
from mlcx.errors import UnsupportedModelError
from mlcx.frontends.hf.checkpoint import read_json

log = logging.getLogger(__name__)
HALF = (0.5, 0.5, 0.5)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)  # Qwen2VLImageProcessor's defaults
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
QWEN_PIXELS = (56 * 56, 28 * 28 * 1280)  # its default min/max pixels
BICUBIC = 3


def _read(folder: Path) -> dict[str, Any] | None:
    path = folder / "preprocessor_config.json"
    return read_json(path) if path.exists() else None


def fixed_size(folder: Path, image_size: int) -> Preprocess:
    """From the model's preprocessor_config.json; SigLIP's defaults where the folder has none."""
    data = _read(folder)
    if data is None:
        log.info("no preprocessor_config.json: SigLIP's defaults (mean/std 0.5, 1/255, bilinear)")
        return Preprocess(size=image_size)
    size = data.get("size") or {}
    side = size.get("height", size.get("shortest_edge", image_size)) if size else image_size
    longest = 0
    if "max_image_size" in data:  # Idefics3: longest edge first, then the tile
        side, longest = data["max_image_size"]["longest_edge"], size.get("longest_edge", 0)
    return Preprocess(
        size=int(side),
        longest_edge=int(longest),
        split=bool(data.get("do_image_splitting", False)),
        mean=tuple(data.get("image_mean", HALF)),
        std=tuple(data.get("image_std", HALF)),
        rescale=float(data.get("rescale_factor", 1 / 255)),
        resample=int(data.get("resample", 2)),
    )


def dynamic(folder: Path, cfg: Any, mean=CLIP_MEAN, std=CLIP_STD) -> Preprocess:
    """Qwen2-VL's image processor: pixel bounds from min_pixels/max_pixels or size's
    shortest_edge/longest_edge; its patch and merge sizes must be the encoder's."""
    data = _read(folder) or {}
    size = data.get("size") or {}
    low = data.get("min_pixels") or size.get("shortest_edge") or QWEN_PIXELS[0]
    high = data.get("max_pixels") or size.get("longest_edge") or QWEN_PIXELS[1]
    patch, merge = data.get("patch_size", cfg.patch_size), data.get("merge_size", cfg.merge_size)
    if (patch, merge) != (cfg.patch_size, cfg.merge_size):
        raise UnsupportedModelError(
            f"preprocessor_config.json's patch_size {patch} / merge_size {merge} differ from the "
            f"vision config's {cfg.patch_size} / {cfg.merge_size}"
        )
    return Preprocess(
        size=cfg.factor,
        mean=tuple(data.get("image_mean", mean)),
        std=tuple(data.get("image_std", std)),
        rescale=float(data.get("rescale_factor", 1 / 255)),
        resample=int(data.get("resample", BICUBIC)),
        min_pixels=int(low),
        max_pixels=int(high),
    )


def preprocess_config(folder: Path, cfg: Any) -> Preprocess:
    """The encoder config `cfg` of any family: dynamic where it has no fixed image size."""
    if hasattr(cfg, "image_size"):
        return fixed_size(folder, cfg.image_size)
    return dynamic(folder, cfg)
