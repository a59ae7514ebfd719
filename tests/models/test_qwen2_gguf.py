"""Qwen2 from a GGUF file (llama.cpp arch `qwen2`) against HF transformers on the same weights.

A tiny random Qwen2 (non-zero q/k/v biases, tied and untied heads) is saved by transformers and
written again as an f32 GGUF with the `gguf` writer, the way llama.cpp's converter names it
(no q/k row permutation, `blk.N.attn_q.bias`, `qwen2.*` metadata). Both are compiled for cpu;
each must match transformers to 1e-4 in fp32 and pick the same 32 greedy tokens.
"""

from __future__ import annotations

import pytest

from mlcx.errors import UnsupportedModelError
from mlcx.frontends import registry
from mlcx.frontends.source import load_source
from tests.support.gguf_vs_hf import (
    assert_matches_transformers,
    assert_quantized_file_matches,
    assert_same_config_and_weights,
    compile_both,
)
from tests.support.tiny_models import TinySpec, load_reference, sharpened

SPECS = [
    TinySpec(arch="qwen2", tie=False, kv_heads=2, seed=21),
    TinySpec(arch="qwen2", tie=True, kv_heads=1, seed=22),
]


def _larger_biases(attn, gen) -> None:
    attn.q_proj.bias.mul_(4.0)
    attn.k_proj.bias.mul_(4.0)


@pytest.fixture(scope="module", params=SPECS, ids=lambda s: f"tie{int(s.tie)}")
def case(request, tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("qwen2_gguf")
    spec = request.param
    folder = sharpened(tiny_model(spec), root / "hf", spec.seed, _larger_biases)
    return folder, *compile_both(folder, root)


def test_biases_are_nonzero_and_in_the_file(case):
    folder, path, *_ = case
    reference = load_reference(folder)
    assert float(reference.model.layers[0].self_attn.q_proj.bias.detach().abs().max()) > 0.01
    names = load_source(str(path)).tensors.names()
    assert {"blk.1.attn_q.bias", "blk.1.attn_k.bias", "blk.1.attn_v.bias"} <= set(names)
    assert ("output.weight" in names) != reference.config.tie_word_embeddings


def test_config_and_weights_equal_the_hf_folders(case):
    _, weights = assert_same_config_and_weights(*case, arch="qwen2")
    assert any(name.endswith("attn.qkv.bias") for name in weights)


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    folder, _, gguf_artifact, hf_artifact = case
    assert_matches_transformers(folder, gguf_artifact if source == "gguf" else hf_artifact)


def test_chat_template_comes_from_the_file(case):
    folder, path, *_ = case
    from transformers import AutoTokenizer

    assets = load_source(str(path)).tokenizer_assets()
    assert assets.chat_template == AutoTokenizer.from_pretrained(folder).chat_template


def test_unsupported_gguf_architecture_lists_qwen2():
    with pytest.raises(UnsupportedModelError, match=r"falcon.*llama.*qwen2"):
        registry.for_gguf("falcon")


def test_block_quantized_file_matches_transformers_gguf_loader(case, tmp_path):
    assert_quantized_file_matches(case[0], tmp_path)
