"""Llama with attention_bias (biases on q, k, v and o) from a Hugging Face folder and from a
GGUF file, whose q/k biases llama.cpp's converter reorders with their rows, against HF
transformers. Large q/k biases make attention peaked, so a bias left out or in the wrong row
order moves the logits well past the tolerance."""

from __future__ import annotations

import pytest

from mlcx.frontends.source import load_source
from tests.support.gguf_vs_hf import assert_matches_transformers, compile_both
from tests.support.tiny_models import TinySpec, sharpened

SPEC = TinySpec(arch="llama", kv_heads=2, seed=81, extra={"attention_bias": True})


def _large_qk_biases(attn, gen) -> None:
    import torch

    for bias in (attn.q_proj.bias, attn.k_proj.bias):
        bias.copy_(2.0 * torch.randn(bias.shape, generator=gen))


@pytest.fixture(scope="module")
def case(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("llama-bias")
    folder = sharpened(tiny_model(SPEC), root / "hf", SPEC.seed, _large_qk_biases)
    return folder, *compile_both(folder, root)


def test_gguf_biases_are_read(case):
    _, path, *_ = case
    config = load_source(str(path)).config
    assert config.qkv_bias and config.o_bias


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    folder, _, gguf_artifact, hf_artifact = case
    assert_matches_transformers(folder, gguf_artifact if source == "gguf" else hf_artifact)
