"""The embedding front doors besides the server: `mlcx bench embed`, `mlcx compile`'s refusal
of targets and quantizations it cannot build an embedder for, LLM.embed's limits, and the
generative API refusing an embedding artifact (and the other way round)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlcx.runtime.api.llm import LLM
from tests.support.cli import one_line_error, run_mlcx


def test_bench_embed_reports_texts_per_second(embedding_model):
    """In process (typer's runner): the command's own code, without a second interpreter."""
    import typer
    from typer.testing import CliRunner

    from mlcx.cli import bench_embed_cmd

    bench = typer.Typer()
    bench.callback()(lambda: None)
    bench_embed_cmd.register(bench)
    _, artifact = embedding_model("bert")
    args = ["--texts", "8", "--tokens", "16", "--batch", "4", "--reps", "1", "--json"]
    result = CliRunner().invoke(bench, ["embed", str(artifact), *args])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["texts"] == 8 and report["tokens_per_text"] == 16 and report["batch"] == 4
    assert report["texts_per_second"] > 0 and len(report["seconds"]) == 1


def test_compile_refuses_targets_it_cannot_build_for(embedding_model, tmp_path):
    folder, _ = embedding_model("qwen3")
    result = run_mlcx("compile", str(folder), "-o", str(tmp_path / "out"), "--target", "android")
    assert "compile for cpu, cuda, metal, webgpu, vulkan only, not 'android'" in one_line_error(
        result
    )


def test_cuda_compiles(embedding_model, tmp_path):
    """Codegen only (no GPU here runs it); metal builds through the same GPU pipeline."""
    from mlcx.artifact.embedding_config import EmbeddingArtifact
    from mlcx.compile.model import CompileRequest
    from tests.support.compile_cache import compile_model

    folder, _ = embedding_model("qwen3")
    out = compile_model(CompileRequest(str(folder), "cuda", output=tmp_path / "cuda"))
    assert EmbeddingArtifact(out).library_path.is_file()


def test_q8_weights_keep_the_vectors(embedding_model, embedder, tmp_path):
    from mlcx.compile.model import CompileRequest
    from mlcx.runtime.api.embedder import Embedder
    from tests.support.compile_cache import compile_model

    folder, _ = embedding_model("bert")
    texts = ["hello world", "The capital of France is Paris."]
    q8 = compile_model(CompileRequest(str(folder), "cpu", "q8f32", output=tmp_path / "q8"))
    q8 = Embedder(q8).embed(texts)
    full = embedder("bert").embed(texts)
    cosine = (q8 * full).sum(1) / np.linalg.norm(q8, axis=1) / np.linalg.norm(full, axis=1)
    assert cosine.min() > 0.9999


def test_compile_refuses_half_precision(embedding_model, tmp_path):
    from mlcx.compile.embedding import compile_embedding
    from mlcx.errors import UnsupportedModelError

    folder, _ = embedding_model("bert")
    with pytest.raises(UnsupportedModelError, match="float32 activations"):
        compile_embedding(folder, tmp_path / "out", quantization="q4f16")


def test_llm_embed_limits(embedding_model):
    llm = LLM(embedding_model("bert")[1])
    [out] = llm.embed("hello world")
    assert len(out.outputs.embedding) == 64 and out.prompt == "hello world"
    assert llm.embeddings(["hello world"]).shape == (1, 64)
    with pytest.raises(ValueError, match="at most 64 tokens"):
        llm.embed(["hello " * 80])
    with pytest.raises(ValueError, match="non-empty list"):
        llm.embed([])
    with pytest.raises(ValueError, match="dimensions"):
        llm.embed(["hello"], dimensions=8)  # BERT declares no Matryoshka training
    with pytest.raises(ValueError, match="embedding model"):
        llm.generate(["hello"])


def test_a_chat_model_has_no_embed(compiled):
    with pytest.raises(ValueError, match="text-generation model"):
        LLM(compiled()).embed(["hello"])


def test_batches_follow_the_limits(embedder):
    from mlcx.runtime.api.embedder import Embedder, EmbedLimits

    model = embedder("bert")
    limited = Embedder(model.artifact, EmbedLimits(max_batch=3, max_batch_tokens=12))
    prompts = [[5] * n for n in (6, 2, 3, 5, 2, 4)]
    batches = limited._batches(prompts)
    assert sorted(r for b in batches for r in b) == list(range(6))
    for rows in batches:
        assert len(rows) <= 3 and len(rows) * max(len(prompts[r]) for r in rows) <= 12
    np.testing.assert_allclose(limited.embed_ids(prompts), model.embed_ids(prompts), atol=1e-5)
