"""Session fixtures: tiny random models and compiled artifacts shared across test modules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.tiny_models import TinySpec, make_tiny_model

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def models_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny_models")


@pytest.fixture(scope="session")
def tiny_model(models_root):
    """Factory: tiny_model(TinySpec(...)) -> HF folder."""
    return lambda spec=TinySpec(): make_tiny_model(models_root, spec)


@pytest.fixture(scope="session")
def compiled(tmp_path_factory, tiny_model):
    """Factory: compiled(spec, quantization, target="cpu", **kw) -> artifact dir (cached)."""
    from mlcx.compile import CompileRequest, compile_model

    cache: dict = {}
    root = tmp_path_factory.mktemp("artifacts")

    def build(spec=TinySpec(), quantization="q0f32", target="cpu", **kw) -> Path:
        key = (spec.key, quantization, target, tuple(sorted(kw.items())))
        if key not in cache:
            out = root / f"{spec.key}-{quantization}-{target}-{len(cache)}"
            req = CompileRequest(
                model=str(tiny_model(spec)),
                target=target,
                quantization=quantization,
                output=out,
                **kw,
            )
            cache[key] = compile_model(req)
        return cache[key]

    return build
