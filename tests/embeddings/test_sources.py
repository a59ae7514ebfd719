"""Recognising embedding folders and reading their pooling, without compiling: the
sentence-transformers modules, the architecture's default, refusals, and a Qwen3-Embedding
folder saved as Qwen3ForCausalLM (tensor names under `model.`, an lm_head that is not read)."""

from __future__ import annotations

import json

import pytest

from mlcx.errors import ModelSourceError, UnsupportedModelError
from mlcx.frontends.embedding_registry import embedding_architecture
from mlcx.frontends.embedding_source import is_embedding_model, load_embedding_source
from mlcx.frontends.pooling import PoolingConfig, read_pooling
from tests.support.tiny_embedders import write_sentence_transformers


@pytest.mark.parametrize("mode", ["mean", "cls", "last"])
@pytest.mark.parametrize("normalize", [True, False])
def test_sentence_transformers_modules_decide_the_pooling(tmp_path, mode, normalize):
    write_sentence_transformers(tmp_path, mode, normalize)
    default = PoolingConfig("mean", matryoshka=True)
    assert read_pooling(tmp_path, default) == PoolingConfig(mode, normalize, True)


def test_without_modules_the_default_holds(tmp_path):
    default = PoolingConfig("last", normalize=True)
    assert read_pooling(tmp_path, default) is default


def test_two_pooling_modes_at_once_are_refused(tmp_path):
    write_sentence_transformers(tmp_path, "mean", False)
    config = tmp_path / "1_Pooling" / "config.json"
    config.write_text(
        json.dumps({"pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": True})
    )
    with pytest.raises(ModelSourceError, match="pooling_mode_max_tokens"):
        read_pooling(tmp_path, PoolingConfig())


def test_unknown_sentence_transformers_architecture_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["XLMRobertaModel"]}))
    write_sentence_transformers(tmp_path, "cls", True)
    with pytest.raises(UnsupportedModelError, match="bert, qwen3-embedding"):
        embedding_architecture(tmp_path)


def test_a_causal_lm_folder_is_an_embedder_only_with_sentence_transformers_modules(tmp_path):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        intermediate_size=64,
        max_position_embeddings=32,
        tie_word_embeddings=False,
    )
    Qwen3ForCausalLM(config).save_pretrained(tmp_path)
    assert not is_embedding_model(tmp_path)  # a chat model: mlcx compile's usual path
    write_sentence_transformers(tmp_path, "last", True)
    source = load_embedding_source(tmp_path)
    assert source.arch.name == "qwen3-embedding" and source.max_tokens == 32
    sources = {name for spec in source.weights for name in spec.sources}
    assert "model.embed_tokens.weight" in sources and "lm_head.weight" not in sources
    assert sources <= set(source.tensors.names())
