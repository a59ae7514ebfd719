"""The image encoders mlcx can compile, by family; an Architecture names its family."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm.relax.frontend import nn

from mlcx.frontends.gemma3_vision import config as gemma3_vision_config
from mlcx.frontends.gemma3_vision import model as gemma3_vision_model
from mlcx.frontends.gemma3_vision import weights as gemma3_vision_weights
from mlcx.frontends.tensors import TensorSource


@dataclass(frozen=True)
class EncoderFamily:
    name: str
    config_from_hf: Callable[[dict[str, Any]], Any]  # -> the family's config (to_dict())
    config_from_dict: Callable[[dict[str, Any]], Any]
    build: Callable[[Any, str], nn.Module]  # (config, dtype) -> module exporting embed_image
    arrays: Callable[[list[str], TensorSource, str], Iterator[tuple[str, np.ndarray]]]


ENCODERS: dict[str, EncoderFamily] = {
    "gemma3": EncoderFamily(
        "gemma3",
        gemma3_vision_config.from_hf,
        gemma3_vision_config.VisionConfig.from_dict,
        gemma3_vision_model.ImageEncoder,
        gemma3_vision_weights.encoder_arrays,
    ),
}
