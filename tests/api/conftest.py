"""A tiny model whose generation config asks for greedy decoding (so that examples written with
the model's defaults answer deterministically), compiled for this CPU with two LoRA slots, and
two PEFT adapters for it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mlcx.compile.model import CompileRequest
from mlcx.kernels.lora_layout import LoraSpec
from tests.support.compile_cache import compile_model
from tests.support.lora_models import ADAPTERS, make_adapter
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(context=1024, seed=4)


@pytest.fixture(scope="session")
def greedy_model(tiny_model, models_root) -> Path:
    folder = models_root / f"{SPEC.key}-greedy"
    if not folder.exists():
        shutil.copytree(tiny_model(SPEC), folder)
        (folder / "generation_config.json").write_text(json.dumps({"temperature": 0.0}))
    return folder


@pytest.fixture(scope="session")
def greedy_artifact(greedy_model, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("greedy") / "model"
    request = CompileRequest(
        str(greedy_model), "cpu", "q0f32", output=out, lora_slots=LoraSpec(2, 8)
    )
    return compile_model(request)


@pytest.fixture(scope="session")
def greedy_adapters(greedy_model, models_root) -> dict[str, Path]:
    return {
        name: make_adapter(greedy_model, models_root / f"lora-greedy-{name}", spec)
        for name, spec in ADAPTERS.items()
    }
