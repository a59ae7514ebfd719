"""Embeddings of tiny random BERT and Qwen3 embedding models against transformers' hidden
states, pooled and normalized here with torch as sentence-transformers would (that package
is not installed): mean over the text's tokens, the CLS token, or the last token (Qwen3-
Embedding's <|endoftext|>). Each reference text runs alone, unpadded; mlcx runs them as one
padded batch of mixed lengths, so padding must not leak into any vector."""

from __future__ import annotations

import numpy as np
import pytest
import tokenizers
import torch
from transformers import AutoModel

TEXTS = [
    "hello world",
    "The capital of France is Paris. The capital of Italy is Rome.",
    "x",
    "Numbers 2024 and 3.14159; caf\u00e9 na\u00efve",
    "what is the answer? The answer is forty two, this is a tiny corpus for testing.",
]
# (model, pooling, normalized)
CASES = [("bert", "mean", False), ("bert-st-cls", "cls", True), ("qwen3", "last", True)]


def _reference(folder, texts, pooling: str, normalize: bool) -> np.ndarray:
    backend = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = AutoModel.from_pretrained(folder, dtype=torch.float32).eval()
    vectors = []
    for text in texts:
        ids = torch.tensor([backend.encode(text, add_special_tokens=True).ids])
        with torch.no_grad():
            states = model(input_ids=ids).last_hidden_state[0]
        pooled = {"mean": states.mean(0), "cls": states[0], "last": states[-1]}[pooling]
        vectors.append(torch.nn.functional.normalize(pooled, dim=0) if normalize else pooled)
    return torch.stack(vectors).numpy()


@pytest.mark.parametrize(("name", "pooling", "normalize"), CASES, ids=[c[0] for c in CASES])
def test_embeddings_match_transformers(embedding_model, embedder, name, pooling, normalize):
    folder, _ = embedding_model(name)
    model = embedder(name)
    assert (model.config.pooling.mode, model.config.pooling.normalize) == (pooling, normalize)
    got = model.embed(TEXTS)
    want = _reference(folder, TEXTS, pooling, normalize)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)
    assert np.abs(want).max() > 0.05  # the models' vectors are not all near zero


def test_small_batches_give_the_same_vectors(embedder):
    from mlcx.runtime.api.embedder import Embedder, EmbedLimits

    model = embedder("qwen3")
    one_by_one = Embedder(model.artifact, EmbedLimits(max_batch=1))
    np.testing.assert_allclose(one_by_one.embed(TEXTS), model.embed(TEXTS), atol=1e-5)


def test_matryoshka_truncation_renormalizes(embedder):
    model = embedder("qwen3")
    full = model.embed(TEXTS[:2])
    short = model.embed(TEXTS[:2], dimensions=16)
    want = full[:, :16] / np.linalg.norm(full[:, :16], axis=1, keepdims=True)
    np.testing.assert_allclose(short, want, atol=1e-6)
