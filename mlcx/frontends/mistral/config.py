"""Mistral configs: Llama's layout plus an optional sliding attention window."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.llama_family import decoder_config_from_hf


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    cfg = decoder_config_from_hf(config, "mistral", qkv_bias=False)
    window = config.get("sliding_window")
    if isinstance(window, int) and 0 < window < cfg.context_window:
        # every layer attends to its last `window` keys (the attention kernels' window)
        cfg = dataclasses.replace(cfg, sliding_window=window)
    return cfg
