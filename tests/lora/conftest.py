"""A tiny random Llama, two random PEFT adapters of rank 8 on q/v and the MLP (written by peft),
and the model compiled for this CPU with two adapter slots, shared by the LoRA tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlcx.kernels.lora_layout import LoraSpec
from tests.support.lora_models import ADAPTERS, make_adapter
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(seed=3)


@pytest.fixture(scope="session")
def lora_base(tiny_model) -> Path:
    return tiny_model(SPEC)


@pytest.fixture(scope="session")
def adapters(lora_base, models_root) -> dict[str, Path]:
    return {
        name: make_adapter(lora_base, models_root / f"lora-{SPEC.key}-{name}", spec)
        for name, spec in ADAPTERS.items()
    }


@pytest.fixture(scope="session")
def lora_artifact(compiled) -> Path:
    """Two adapter slots of rank 8 on every projection; f32 pages (the compiled fixture's)."""
    return compiled(SPEC, lora_slots=LoraSpec(2, 8))
