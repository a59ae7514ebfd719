"""The tiny Phi-4-mini (RoPE over 12 of 16 head features in the GPU rope + KV append kernel,
LongRoPE short factors, GQA, tied head) through the webgpu plan on wgpu (lavapipe here)
against HF transformers: every row of a 29-token prompt, then greedy decode steps, in f32."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.harness import assert_prompt_and_greedy_steps_match
from tests.support.tiny_models import PHI4_MINI, PHI4_ORIGINAL, load_reference, sharpen_phi3

TOL = 1e-4
STEPS = 8


@pytest.fixture(scope="module")
def case(adapter, tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("phi4_mini_wgpu")
    folder = sharpen_phi3(tiny_model(PHI4_MINI), root / "hf", PHI4_MINI.seed)
    request = CompileRequest(
        str(folder), "webgpu", "q0f32", output=root / "webgpu", context_window=PHI4_ORIGINAL
    )
    return folder, compile_model(request)


def test_the_plan_fuses_the_partial_rope_into_the_append(case):
    """No plain RoPE kernel is left: partial rotary takes the fused path."""
    _, artifact = case
    names = set(re.findall(r'"(\w*rope\w*)"', (artifact / "webgpu-plan.json").read_text()))
    assert "rope_append_gpu" in names
    assert all(name.startswith("rope_append_gpu") for name in names), names


def test_logits_and_greedy_steps_match_transformers(case):
    folder, artifact = case
    reference = load_reference(folder)
    prompt = np.random.default_rng(7).integers(0, reference.config.vocab_size, 29).tolist()
    assert_prompt_and_greedy_steps_match(artifact, reference, prompt, STEPS, TOL)
