"""Mistral configs: Llama's layout plus an optional sliding attention window."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.llama_family import decoder_config_from_hf

log = logging.getLogger(__name__)


def from_hf(config: dict[str, Any]) -> DecoderConfig:
    cfg = decoder_config_from_hf(config, "mistral", qkv_bias=False)
    window = config.get("sliding_window")
    if isinstance(window, int) and 0 < window < cfg.context_window:
        # Within the window, sliding-window attention equals full attention; capping the
        # context keeps results exact without a sliding page table.
        log.warning("mistral: context window capped to the sliding window (%d tokens)", window)
        cfg = dataclasses.replace(cfg, context_window=window)
    return cfg
