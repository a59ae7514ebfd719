"""Qwen2 configs: Llama's layout with biases on the q/k/v projections."""

from __future__ import annotations

import logging
from typing import Any

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.llama_family import decoder_config_from_hf

log = logging.getLogger(__name__)


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    if config.get("use_sliding_window"):
        raise UnsupportedModelError(
            "qwen2: use_sliding_window=true is not supported; set it to false in config.json "
            "(the released Qwen2 models do not use it)"
        )
    return decoder_config_from_hf(config, "qwen2", qkv_bias=True)
