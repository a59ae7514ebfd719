"""Qwen3 from a Hugging Face folder and from a GGUF file (llama.cpp arch `qwen3`) against HF
transformers on the same weights.

A tiny random Qwen3 (head_dim 32 while hidden / heads is 16, tied and untied heads) gets
unit-scale layer norms and q/k norm weights far from one another and from 1, so attention is
peaked: a missing or misplaced q/k norm, or a wrong q/k row order, moves the logits well past the
tolerance. It is written again as an f32 GGUF the way llama.cpp's converter names it
(`blk.N.attn_q_norm.weight`, `qwen3.attention.key_length`). Both are compiled for cpu; each must
match transformers to 1e-4 in fp32 and pick the same 32 greedy tokens.
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
from tests.support.tiny_models import TinySpec, load_reference, sharpen_qwen3

HEAD_DIM = 32
SPECS = [
    TinySpec(arch="qwen3", tie=False, kv_heads=2, seed=31, extra={"head_dim": HEAD_DIM}),
    TinySpec(arch="qwen3", tie=True, kv_heads=1, seed=32, extra={"head_dim": HEAD_DIM}),
]


@pytest.fixture(scope="module", params=SPECS, ids=lambda s: f"tie{int(s.tie)}")
def case(request, tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("qwen3")
    folder = sharpen_qwen3(tiny_model(request.param), root / "hf", request.param.seed)
    return folder, *compile_both(folder, root)


def test_head_dim_and_qk_norms_are_in_the_file(case):
    folder, path, *_ = case
    reference = load_reference(folder)
    assert reference.config.head_dim != reference.config.hidden_size // 4
    names = load_source(str(path)).tensors.names()
    assert {"blk.1.attn_q_norm.weight", "blk.1.attn_k_norm.weight"} <= set(names)
    assert not any(name.endswith(".bias") for name in names)
    assert ("output.weight" in names) != reference.config.tie_word_embeddings


def test_config_and_weights_equal_the_hf_folders(case):
    config, weights = assert_same_config_and_weights(*case, arch="qwen3")
    assert config.head_dim == HEAD_DIM and config.qk_norm
    assert {"layers.1.attn.q_norm.weight", "layers.1.attn.k_norm.weight"} <= weights.keys()


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    folder, _, gguf_artifact, hf_artifact = case
    assert_matches_transformers(folder, gguf_artifact if source == "gguf" else hf_artifact)


def test_unsupported_architectures_list_qwen3():
    with pytest.raises(UnsupportedModelError, match=r"Qwen3ForCausalLM"):
        registry.for_hf("FalconForCausalLM")
    with pytest.raises(UnsupportedModelError, match=r"GGUF files of: .*\bqwen2, .*\bqwen3\b"):
        registry.for_gguf("falcon")


def test_attention_bias_is_refused():
    from_hf = registry.families()["qwen3"].config_from_hf

    with pytest.raises(UnsupportedModelError, match="attention_bias"):
        from_hf({"attention_bias": True})


def test_block_quantized_file_matches_transformers_gguf_loader(case, tmp_path):
    """The q/k norms stay f32 in the quantized file, as llama.cpp keeps 1-D tensors. The float
    linear kernels: the q/k/v of three block types is kept as a stack, and the int16 kernels'
    activation rounding is about 1e-4 of these sharpened logits (as for Gemma 3)."""
    from mlcx.kernels.cpu.kernel_config import LinearKernels
    from mlcx.targets.base import BuildOptions

    options = {"options": BuildOptions(linear_kernels=LinearKernels.FLOAT)}
    # transformers' GGUF config mapping ignores qwen3.attention.key_length: head_dim is given
    assert_quantized_file_matches(case[0], tmp_path, options, head_dim=HEAD_DIM)
