"""Phi-3 from a Hugging Face folder and from a GGUF file (llama.cpp arch `phi3`) against HF
transformers on the same weights.

A tiny random Phi-3 keeps q/k/v in one `qkv_proj` and gate/up in one `gate_up_proj`, uses
LongRoPE (short factors within the 64-token pretraining length, long ones past it, each far
from 1 so a wrong choice moves the logits) and a sliding window of 16 keys, shorter than every
prompt here. Its q rows are scaled so that attention is peaked: a wrong split of the fused
weights or a wrong RoPE fails by far. It is written again as an f32 GGUF the way llama.cpp's
converter does (`attn_qkv`, `ffn_up` with gate and up rows, `rope_factors_{short,long}`).
Compiled for a 64-token context, both use the short factors and must match transformers to 1e-4
in fp32 with the same 32 greedy tokens; compiled for the full context, the long factors, which
transformers uses for a 100-token prompt.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from mlcx.errors import UnsupportedModelError
from mlcx.frontends import registry
from mlcx.frontends.source import load_source
from tests.support.compile_cache import compile_model
from tests.support.gguf_vs_hf import (
    TOL,
    assert_matches_transformers,
    assert_quantized_file_matches,
    assert_same_config_and_weights,
    compile_both,
)
from tests.support.harness import Harness, hf_logits
from tests.support.reference_pages import reference_pages
from tests.support.tiny_models import TinySpec, load_reference, sharpen_phi3

ORIGINAL = 64
LONGROPE = {
    "rope_type": "longrope",
    "rope_theta": 10000.0,
    "short_factor": [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0],
    "long_factor": [1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0],
    "attention_factor": 1.25,  # f32-exact: the GGUF stores it as f32
}
SPEC = TinySpec(
    arch="phi3",
    kv_heads=2,
    seed=51,
    extra={
        "original_max_position_embeddings": ORIGINAL,
        "rope_parameters": LONGROPE,
        "sliding_window": 16,
    },
)


@pytest.fixture(scope="module")
def case(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("phi3")
    folder = sharpen_phi3(tiny_model(SPEC), root / "hf", SPEC.seed)
    return folder, *compile_both(folder, root, context_window=ORIGINAL)


def test_fused_tensors_and_rope_factors_are_in_the_file(case):
    _, path, *_ = case
    names = set(load_source(str(path)).tensors.names())
    assert {"blk.0.attn_qkv.weight", "blk.0.ffn_up.weight", "rope_factors_long.weight"} <= names
    assert not any("attn_q." in n or "ffn_gate" in n for n in names)


def test_config_and_weights_equal_the_hf_folders(case):
    config, _ = assert_same_config_and_weights(*case, arch="phi3")
    assert config.sliding_window == 16
    assert config.rope_scaling["long_factor"] == LONGROPE["long_factor"]
    assert config.rope_scaling["original_max_position_embeddings"] == ORIGINAL


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_short_context_logits_and_greedy_tokens_match_transformers(case, source):
    folder, _, gguf_artifact, hf_artifact = case
    assert_matches_transformers(folder, gguf_artifact if source == "gguf" else hf_artifact)


def test_long_context_uses_the_long_factors(case, tmp_path):
    folder = case[0]
    artifact = compile_model(
        CompileRequest(
            model=str(folder), output=tmp_path / "long", quantization="q0f32", **reference_pages()
        )
    )
    reference = load_reference(folder)
    rng = np.random.default_rng(9)
    long_prompt = rng.integers(0, reference.config.vocab_size, 100).tolist()
    got = Harness(artifact, num_blocks=16).step({0: long_prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, long_prompt)).max() <= TOL
    # transformers keeps the short factors for a prompt within the pretraining length
    short_prompt = long_prompt[:40]
    got = Harness(artifact, num_blocks=16).step({0: short_prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, short_prompt)).max() > 100 * TOL


def test_unsupported_architectures_list_phi3():
    with pytest.raises(UnsupportedModelError, match=r"Phi3ForCausalLM"):
        registry.for_hf("FalconForCausalLM")
    with pytest.raises(UnsupportedModelError, match=r"phi3"):
        registry.for_gguf("falcon")


def test_a_phi3_128k_style_config_parses():
    """As Phi-3-mini-128k-instruct's config.json spells it: rope_scaling type "su"."""
    from_hf = registry.families()["phi3"].config_from_hf

    config = {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "sliding_window": 262144,
        "rope_scaling": {"type": "su", "short_factor": [1.0] * 8, "long_factor": [2.0] * 8},
    }
    cfg = from_hf(config)
    assert cfg.rope_scaling["rope_type"] == "longrope" and cfg.sliding_window == 0
    expected = (1 + np.log(131072 / 4096) / np.log(4096)) ** 0.5
    assert cfg.rope_scaling["attention_factor"] == pytest.approx(expected)


def test_block_quantized_file_matches_transformers_gguf_loader(case, tmp_path):
    """The fused ffn_up (gate and up rows) as Q4_1 blocks and the rest block-quantized, kept
    by mlcx, dequantized by transformers; compiled for the pretraining context (short factors).
    transformers' GGUF config mapping reads no LongRoPE or window: they are given, with a pad
    id inside the tiny vocabulary."""
    options = {"context_window": ORIGINAL}
    assert_quantized_file_matches(case[0], tmp_path, options, pad_token_id=1, **SPEC.extra)
