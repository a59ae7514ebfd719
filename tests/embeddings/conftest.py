"""Tiny embedding models, each written and compiled for cpu once per session."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def embedding_model(tmp_path_factory, embedding_folder):
    """Factory: embedding_model(name) -> (HF folder, compiled artifact dir), built once."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    root = tmp_path_factory.mktemp("embedders-cpu")
    built: dict[str, tuple[Path, Path]] = {}

    def build(name: str) -> tuple[Path, Path]:
        if name not in built:
            folder = embedding_folder(name)
            out = compile_model(CompileRequest(model=str(folder), output=root / name))
            built[name] = (folder, out)
        return built[name]

    return build


@pytest.fixture(scope="session")
def embedder(embedding_model):
    """Factory: embedder(name) -> a loaded Embedder, shared by the session."""
    from mlcx.runtime.api.embedder import Embedder

    loaded = {}

    def load(name: str) -> Embedder:
        if name not in loaded:
            loaded[name] = Embedder(embedding_model(name)[1])
        return loaded[name]

    return load
