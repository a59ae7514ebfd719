"""Phi-4-mini's shape of Phi-3 (RoPE over 0.75 of each head, LongRoPE factors sized for the
rotary features, GQA, tied embeddings) from a Hugging Face folder and from GGUF files against
HF transformers on the same weights.

A tiny random Phi3ForCausalLM made with Phi3Config(partial_rotary_factor=0.75): 12 of each
head's 16 features turn, 6 factors a LongRoPE list, q rows scaled so attention is peaked (a
rotation of the wrong features, or of all of them, fails by far). It is written again as llama.cpp's
converter writes Phi-4-mini (`phi3` arch, rope.dimension_count 12, rope_factors_{short,long}
of 6, no output.weight): as f32 and with Q8_0/Q4_x blocks. Compiled for the 64-token
pretraining context (short factors) every path must match transformers to 1e-4 in fp32 over
a 32-token prompt and 32 greedy steps with the same tokens. (The long factors take the same
code: tests/models/test_phi3.py runs them; here the GGUF's long list must equal the folder's.)
"""

from __future__ import annotations

import pytest

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.registry import families
from mlcx.frontends.source import load_source
from tests.support.gguf_vs_hf import (
    assert_matches_transformers,
    assert_quantized_file_matches,
    assert_same_config_and_weights,
    compile_both,
)
from tests.support.tiny_models import PHI4_MINI, PHI4_ORIGINAL, sharpen_phi3

HEAD_DIM, ROTARY = 16, 12


@pytest.fixture(scope="module")
def case(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("phi4_mini")
    folder = sharpen_phi3(tiny_model(PHI4_MINI), root / "hf", PHI4_MINI.seed)
    return folder, *compile_both(folder, root, context_window=PHI4_ORIGINAL)


def test_the_file_is_written_as_llama_cpp_writes_phi4_mini(case):
    _, path, *_ = case
    source = load_source(str(path))
    assert source.tensors.arch_meta("rope.dimension_count") == ROTARY
    names = set(source.tensors.names())
    assert "output.weight" not in names and "rope_factors_long.weight" in names
    assert source.tensors.get("rope_factors_short.weight").to_float().size == ROTARY // 2


def test_config_and_weights_equal_the_hf_folders(case):
    config, weights = assert_same_config_and_weights(*case, arch="phi3")
    assert (config.head_dim, config.rotary_dim, config.num_kv_heads) == (HEAD_DIM, ROTARY, 2)
    assert config.tie_word_embeddings and "lm_head" not in weights
    assert config.rope_scaling["long_factor"] == PHI4_MINI.extra["rope_parameters"]["long_factor"]


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    folder, _, gguf_artifact, hf_artifact = case
    artifact = gguf_artifact if source == "gguf" else hf_artifact
    # 32 + 32 tokens: the whole 64-token context, all with the short factors
    assert_matches_transformers(folder, artifact, prompt_tokens=32)


def test_block_quantized_file_matches_transformers_gguf_loader(case, tmp_path):
    """Q8_0/Q4_0/Q4_1 tensors kept by mlcx, dequantized by transformers; transformers' GGUF
    config mapping reads neither rope.dimension_count nor LongRoPE nor the tied head: given."""
    options = {"context_window": PHI4_ORIGINAL}
    extra = {"pad_token_id": 1, "tie_word_embeddings": True, **PHI4_MINI.extra}
    assert_quantized_file_matches(case[0], tmp_path, options, **extra)


def _phi4_mini_config(**changes) -> dict:
    """Phi-4-mini-instruct's config.json in its own spelling (top-level partial_rotary_factor,
    rope_scaling "type": "longrope" with 48 factors), with `changes`."""
    config = {
        "architectures": ["Phi3ForCausalLM"],
        "hidden_size": 3072,
        "num_attention_heads": 24,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "intermediate_size": 8192,
        "vocab_size": 200064,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "partial_rotary_factor": 0.75,
        "rope_theta": 10000.0,
        "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [2.0] * 48},
        "sliding_window": 262144,
        "tie_word_embeddings": True,
    }
    return {**config, **changes}


def test_phi4_mini_config_parses():
    cfg = families()["phi3"].config_from_hf(_phi4_mini_config())
    assert (cfg.head_dim, cfg.rotary_dim, cfg.rope_dim) == (128, 96, 96)
    assert cfg.tie_word_embeddings and cfg.sliding_window == 0
    assert DecoderConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"partial_rotary_factor": 1.5}, "partial_rotary_factor must be a number in"),
        ({"partial_rotary_factor": 0.7}, "gives 89 rotary features"),
        (
            {
                "rope_scaling": {
                    "type": "longrope",
                    "short_factor": [1.0] * 64,
                    "long_factor": [2.0] * 64,
                }
            },
            "short_factor has 64 entries",
        ),
    ],
    ids=["above-one", "odd-rotary", "factors-for-the-whole-head"],
)
def test_bad_partial_rotary_configs_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        families()["phi3"].config_from_hf(_phi4_mini_config(**changes))


@pytest.mark.parametrize("rotary", [-2, 7, HEAD_DIM + 2])
def test_a_decoder_config_checks_its_rotary_dimension(rotary):
    with pytest.raises(ValueError, match="even and at most head_dim"):
        DecoderConfig(64, 64, 128, 2, 4, 2, HEAD_DIM, 64, rotary_dim=rotary)
