"""Rules that derive fields from the config read so far, whichever the source."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig


def embed_scale_sqrt(reader: Any, cfg: DecoderConfig) -> Mapping[str, Any]:
    """Embeddings multiplied by sqrt(hidden_size) (Gemma)."""
    return {"embed_scale": math.sqrt(cfg.hidden_size)}
