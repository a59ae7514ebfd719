"""Gemma 3 text from a Hugging Face folder and from a GGUF file (llama.cpp arch `gemma3`)
against HF transformers on the same weights.

A tiny random Gemma 3 (explicit head_dim 32, tied head) interleaves a local layer (window of 16
keys, RoPE base 10^4) with a global one (base 10^6); it has (1 + w) RMSNorms before and after
attention and MLP, q/k norms (drawn far from one another, so attention is peaked), GeGLU and
embeddings scaled by sqrt(hidden). It is written again as an f32 GGUF the way llama.cpp's
converter does (norm weights stored as 1 + w, post_attention_norm / ffn_norm / post_ffw_norm,
the layer pattern as attention.sliding_window_pattern). Both are compiled for cpu and must
match transformers to 1e-4 in fp32 over prompts longer than the window, with the same 32
greedy tokens. A second, untied model scales scores by query_pre_attn_scalar 24 (not head_dim),
softcaps its logits at 3 and scales its global RoPE linearly; its attn_logit_softcapping is
ignored, as transformers' Gemma 3 ignores it.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from mlcx.errors import UnsupportedModelError
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
from tests.support.tiny_models import TinySpec, load_reference, sharpen_gemma3

WINDOW = 16
ROPE = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
}
COMMON = {
    "head_dim": 32,
    "sliding_window": WINDOW,
    "layer_types": ["sliding_attention", "full_attention"],
}
SPEC = TinySpec(
    arch="gemma3",
    tie=True,
    kv_heads=2,
    seed=61,
    extra={**COMMON, "query_pre_attn_scalar": 32, "rope_parameters": ROPE},
)
SCALED = TinySpec(
    arch="gemma3",
    tie=False,
    kv_heads=1,
    seed=62,
    extra={
        **COMMON,
        "query_pre_attn_scalar": 24,
        "final_logit_softcapping": 3.0,
        "attn_logit_softcapping": 2.0,
        "rope_parameters": {
            **ROPE,
            "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0},
        },
    },
)


@pytest.fixture(scope="module")
def case(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("gemma3")
    folder = sharpen_gemma3(tiny_model(SPEC), root / "hf", SPEC.seed)
    return folder, *compile_both(folder, root)


def test_gemma_tensors_are_in_the_file(case):
    folder, path, *_ = case
    names = set(load_source(str(path)).tensors.names())
    assert {"blk.1.post_attention_norm.weight", "blk.1.post_ffw_norm.weight"} <= names
    assert "output.weight" not in names


def test_config_and_weights_equal_the_hf_folders(case):
    config, weights = assert_same_config_and_weights(*case, arch="gemma3")
    assert config.full_attention_layers == (1,) and config.sliding_window == WINDOW
    assert [config.layer_window(i) for i in range(2)] == [WINDOW, 0]
    assert config.kv_window == 0  # a global layer reads every page: none is released
    assert [config.layer_rope(i)[0] for i in range(2)] == [1e4, 1e6]
    assert config.embed_scale == 8.0 and config.hidden_act == "gelu_tanh"
    reference = load_reference(case[0])
    norm = reference.model.layers[0].post_feedforward_layernorm.weight.detach().numpy()
    np.testing.assert_array_equal(weights["layers.0.mlp_post_norm.weight"], norm + 1)


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    folder, _, gguf_artifact, hf_artifact = case
    assert_matches_transformers(folder, gguf_artifact if source == "gguf" else hf_artifact)


def test_a_long_prompt_matches_transformers(case):
    folder, *_, hf_artifact = case
    reference = load_reference(folder)
    prompt = np.random.default_rng(5).integers(0, reference.config.vocab_size, 100).tolist()
    got = Harness(hf_artifact, num_blocks=16).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL


def test_attention_scale_softcaps_and_linear_rope_match_transformers(tiny_model, tmp_path):
    folder = sharpen_gemma3(tiny_model(SCALED), tmp_path / "hf", SCALED.seed)
    request = CompileRequest(
        model=str(folder), output=tmp_path / "art", quantization="q0f32", **reference_pages()
    )
    artifact = compile_model(request)
    config = load_source(str(folder)).config
    assert config.final_logit_softcap == 3.0 and config.attn_scale == 24**-0.5
    assert config.attn_logit_softcap == 0.0
    assert config.layer_rope(1)[1] == {"rope_type": "linear", "factor": 2.0}
    assert_matches_transformers(folder, artifact)


def test_unsupported_layer_kinds_are_refused(case):
    import json

    from mlcx.frontends.registry import families

    from_hf = families()["gemma3"].config_from_hf

    config = json.loads((case[0] / "config.json").read_text())
    with pytest.raises(UnsupportedModelError, match="layer_types"):
        from_hf({**config, "layer_types": ["sliding_attention", "chunked_attention"]})


def test_block_quantized_file_matches_transformers_gguf_loader(case, tmp_path):
    """Q4_0/Q4_1/Q8_0 blocks kept by mlcx, dequantized by transformers (which takes the 1 off
    the stored norm weights again). transformers' GGUF config mapping drops the layer layout,
    RoPE bases and score scale: they are given. The float linear kernels, as the default int16
    ones round activations by about 1e-4 of these larger Gemma logits."""
    from mlcx.kernels.cpu.kernel_config import LinearKernels
    from mlcx.targets.base import BuildOptions

    options = {"options": BuildOptions(linear_kernels=LinearKernels.FLOAT)}
    extra = {**SPEC.extra, "rope_parameters": ROPE}
    assert_quantized_file_matches(case[0], tmp_path, options, **extra)
