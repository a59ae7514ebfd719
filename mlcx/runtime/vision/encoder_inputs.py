"""One preprocessed frame -> the named inputs of the artifact's `embed_image`, by encoder
family: the pixels themselves (a fixed-size encoder), or Qwen-VL's patches and tables
(runtime.vision.qwen_inputs)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mlcx.artifact.encoder import EncoderConfig
from mlcx.frontends.qwen_vision.config import VisionConfig
from mlcx.kernels.step_params import PIXELS
from mlcx.runtime.vision.qwen_inputs import qwen_inputs


def _pixels(config: EncoderConfig, frame: np.ndarray) -> dict[str, np.ndarray]:
    return {PIXELS: frame}


def _qwen(config: EncoderConfig, frame: np.ndarray) -> dict[str, np.ndarray]:
    return qwen_inputs(frame, VisionConfig.from_dict(config.config))


INPUTS: dict[str, Callable[[EncoderConfig, np.ndarray], dict[str, np.ndarray]]] = {
    "qwen2_5_vl": _qwen,
    "qwen3_vl": _qwen,
}


def frame_inputs(config: EncoderConfig, frame: np.ndarray) -> dict[str, np.ndarray]:
    """embed_image's inputs by name, in the artifact's order (EncoderConfig.inputs)."""
    named = INPUTS.get(config.family, _pixels)(config, frame)
    return {name: named[name] for name in config.inputs}
