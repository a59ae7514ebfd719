"""Embedding models compiled for webgpu: the `embed` plan runs natively through wgpu-native
(lavapipe here) and gives transformers' pooled vectors, as the cpu artifact does; the browser
runs the same plan (tests/webgpu/test_web_examples.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.embeddings.test_vs_transformers import TEXTS, _reference

CASES = [("bert", "mean", False), ("qwen3", "last", True)]


@pytest.fixture(scope="module")
def webgpu_embedder(webgpu_embedding):
    pytest.importorskip("wgpu")
    from mlcx.runtime.api.embedder import Embedder

    return lambda name: Embedder(webgpu_embedding(name))


@pytest.mark.parametrize(("name", "pooling", "normalize"), CASES, ids=[c[0] for c in CASES])
def test_webgpu_embeddings_match_transformers(
    embedding_folder, webgpu_embedder, name, pooling, normalize
):
    folder = embedding_folder(name)
    model = webgpu_embedder(name)
    assert model.config.runtime == "wgpu" and model.config.target == "webgpu"
    got = model.embed(TEXTS)
    np.testing.assert_allclose(got, _reference(folder, TEXTS, pooling, normalize), atol=1e-4)
