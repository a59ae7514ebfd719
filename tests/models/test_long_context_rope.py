"""Long-context RoPE scalings from Hugging Face folders and GGUF files against HF transformers,
at positions past the pretraining context.

A tiny random Llama with Llama 3.1's llama3 scaling (factor 8 over a 32-token pretraining
context, 256 positions) and a tiny Qwen2 with YaRN (factor 4 over 32 tokens, its config's
maximum left at 32 as Qwen's configs do, so compiling for 128 tokens uses the scaled maximum).
Their q projections are scaled so attention is peaked and a wrong frequency moves the logits.
Each is written again as an f32 GGUF as llama.cpp's converter does (llama3: a rope_freqs tensor;
YaRN: rope.scaling.* metadata). Every row of a 100-token prompt and 4 greedy steps must match
transformers to 1e-4 in fp32, where the unscaled RoPE would not.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from mlcx.frontends.source import load_source
from mlcx.kernels.rope_scaling import rope_table
from tests.support.compile_cache import compile_model
from tests.support.gguf_vs_hf import TOL, assert_same_config_and_weights, compile_both
from tests.support.harness import assert_prompt_and_greedy_steps_match, hf_logits
from tests.support.tiny_models import (
    LLAMA3,
    ROPE_THETA,
    YARN,
    load_reference,
    sharpened,
)

PROMPT = 100
STEPS = 4
CASES = {"llama3": (LLAMA3, 256), "yarn": (YARN, 128)}


def _peaked(attn, gen) -> None:
    import torch

    attn.q_proj.weight.mul_(3.0)
    attn.q_proj.weight.add_(0.02 * torch.randn(attn.q_proj.weight.shape, generator=gen))


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tiny_model, tmp_path_factory):
    spec, window = CASES[request.param]
    root = tmp_path_factory.mktemp(request.param)
    folder = sharpened(tiny_model(spec), root / "hf", spec.seed, _peaked)
    return request.param, folder, *compile_both(folder, root, context_window=window)


def _prompt(reference) -> list[int]:
    return np.random.default_rng(5).integers(0, reference.config.vocab_size, PROMPT).tolist()


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_logits_past_the_original_context_match_transformers(case, source):
    _, folder, _, gguf_art, hf_art = case
    reference = load_reference(folder)
    artifact = gguf_art if source == "gguf" else hf_art
    assert_prompt_and_greedy_steps_match(artifact, reference, _prompt(reference), STEPS, TOL)


def test_the_scaling_matters_at_these_positions(case):
    """transformers with the same weights and unscaled RoPE is far off: the check above sees
    the scaling."""
    import torch
    from transformers import AutoModelForCausalLM

    _, folder, *_ = case
    reference = load_reference(folder)
    plain = AutoModelForCausalLM.from_pretrained(
        folder,
        dtype=torch.float32,
        rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA},
    ).eval()
    prompt = _prompt(reference)
    assert np.abs(hf_logits(plain, prompt) - hf_logits(reference, prompt)).max() > 100 * TOL


def test_gguf_config_and_weights_equal_the_hf_folders(case):
    """YaRN's parameters come back as the HF config's; llama3's as the rope_freqs divisors,
    whose frequencies equal the HF parameters' (the tensor is no weight of the artifact)."""
    kind, folder, path, gguf_art, hf_art = case
    if kind == "yarn":
        assert_same_config_and_weights(folder, path, gguf_art, hf_art, arch="qwen2")
        return
    assert "rope_freqs.weight" in load_source(str(path)).tensors.names()
    ours, theirs = load_source(str(path)).config, load_source(str(folder)).config
    assert ours.rope_scaling["rope_type"] == "freq_factors"
    np.testing.assert_allclose(
        rope_table(ours.rope_scaling, ROPE_THETA, ours.head_dim).inv_freq,
        rope_table(theirs.rope_scaling, ROPE_THETA, theirs.head_dim).inv_freq,
        rtol=1e-6,
    )
    _, weights = assert_same_config_and_weights(
        folder, path, gguf_art, hf_art, arch="llama", rope_scaling=theirs.rope_scaling
    )
    assert not any("rope" in name for name in weights)


def test_a_context_past_the_scaled_maximum_is_refused(tiny_model, tmp_path):
    request = CompileRequest(
        model=str(tiny_model(YARN)), output=tmp_path / "art", context_window=129
    )
    with pytest.raises(ValueError, match=r"maximum of 128 tokens .*--context-window 128"):
        compile_model(request)


def test_the_yarn_model_builds_for_a_gpu_target(compiled):
    """webgpu's fused RoPE + KV append kernel takes the table formula too (run on an adapter
    in tests/kernels/test_gpu_rope_append.py)."""
    artifact = compiled(YARN, "q4f16", target="webgpu", context_window=128)
    assert (artifact / "webgpu-plan.json").exists()
