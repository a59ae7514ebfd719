"""Tiny embedding models, each written and compiled for cpu once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiny_embedders import (
    make_tiny_bert,
    make_tiny_qwen3_embedding,
    write_sentence_transformers,
)


def _bert_st_cls(folder: Path) -> Path:
    make_tiny_bert(folder, seed=2)
    write_sentence_transformers(folder, "cls", normalize=True)
    return folder


# name -> how its folder is made: a bare BertModel (mean pooling by default), a
# sentence-transformers BERT pooling by CLS and normalizing, a bare Qwen3Model
MAKERS = {
    "bert": lambda folder: make_tiny_bert(folder, seed=1),
    "bert-st-cls": _bert_st_cls,
    "qwen3": lambda folder: make_tiny_qwen3_embedding(folder, seed=3),
}


@pytest.fixture(scope="session")
def embedding_model(tmp_path_factory):
    """Factory: embedding_model(name) -> (HF folder, compiled artifact dir), built once."""
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    root = tmp_path_factory.mktemp("embedders")
    built: dict[str, tuple[Path, Path]] = {}

    def build(name: str) -> tuple[Path, Path]:
        if name not in built:
            folder = MAKERS[name](root / name)
            out = compile_model(CompileRequest(model=str(folder), output=root / f"{name}-cpu"))
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
