"""An image -> the encoder's pixels, as the model's own preprocessor config says: resize to
size x size, rescale, normalize per channel, channels first."""

from __future__ import annotations

import numpy as np
from PIL import Image

from mlcx.artifact.encoder import Preprocess


def pixels(image: Image.Image, config: Preprocess) -> np.ndarray:
    """float32 [3, size, size]."""
    rgb = image.convert("RGB")
    side = config.size
    resized = rgb.resize((side, side), resample=Image.Resampling(config.resample))
    # transformers rescales and normalizes in float64 over the uint8 values, then casts
    array = np.asarray(resized, dtype=np.float64) * config.rescale
    array = (array - np.array(config.mean)) / np.array(config.std)
    return np.ascontiguousarray(array.transpose(2, 0, 1), dtype=np.float32)
