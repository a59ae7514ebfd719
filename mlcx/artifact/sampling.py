"""The sampling defaults an artifact records (`ArtifactConfig.sampling`) from the model's
generation config, and which fields they may set: `SamplingParams.with_defaults` applies
them under what each request gives, at every front door.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The SamplingParams fields a model may default; the others are the request's alone.
DEFAULTABLE = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")
# Recorded when the model source suggests none.
FALLBACK = {"temperature": 0.7, "top_p": 0.95}


def recorded_defaults(generation_config: Mapping[str, Any]) -> dict[str, Any]:
    """What `mlcx compile` records: the numeric defaultable fields of the generation config
    (a preset's own `sampling` for a preset), or FALLBACK when it has none."""
    found = {
        key: generation_config[key]
        for key in DEFAULTABLE
        if isinstance(generation_config.get(key), int | float)
    }
    return found or dict(FALLBACK)
