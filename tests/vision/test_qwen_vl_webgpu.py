"""Qwen2.5-VL and Qwen3-VL compiled for webgpu (f32) and run by the Python wgpu backend
(lavapipe here) against transformers, on test_qwen_vl.py's tiny random folders: the image rows
from the encoder's WebGPU plan (its patches, patch positions, windows and position-grid tables
as inputs), every logit row of an image prompt (the steps take the 3-row M-RoPE positions) and
32 greedy tokens, at two image sizes so that the dynamic resolution shows (6 and 12 or 15 image
tokens). The same folders as q0f16 (an f16 encoder and text model, what f16 models get on GPU
targets): every prompt logit within 5e-3 of transformers' (observed ~1e-3, logits of magnitude
~0.3). Target vulkan (the same plan on a Vulkan adapter): 32 greedy tokens equal transformers'."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlcx.artifact.encoder import read_encoder
from mlcx.compile.model import CompileRequest
from mlcx.kernels.step_params import EMBED_IMAGE, PREFILL, ROPE_POSITIONS
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.targets.webgpu_plan.schema import Plan
from tests.support.compile_cache import compile_model
from tests.support.tiny_qwen_vl import hf_image_inputs
from tests.vision.conftest import random_image
from tests.vision.test_qwen_vl import (  # noqa: F401 (fixtures)
    SIZES,
    _hf,
    _hf_rows,
    _messages,
    _prompt_logits,
    folder,
    greedy_matches_transformers,
    kind,
    prompt_logits_match_transformers,
    reference,
)

TOL = 1e-4
TOL_F16 = 5e-3


@pytest.fixture(scope="module")
def webgpu_artifact(folder, kind, tmp_path_factory):  # noqa: F811
    wgpu = pytest.importorskip("wgpu")
    if not wgpu.gpu.enumerate_adapters_sync():
        pytest.skip("no wgpu adapter: run scripts/setup-system.sh (mesa-vulkan-drivers)")
    out = tmp_path_factory.mktemp(f"{kind}-webgpu") / "art"
    return compile_model(CompileRequest(str(folder), "webgpu", "q0f32", output=out))


@pytest.fixture(scope="module")
def llm(webgpu_artifact):
    return LLM(str(webgpu_artifact), EngineConfig(kv_blocks=64))


@pytest.fixture(scope="module")
def f16_llm(webgpu_artifact, folder, kind, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp(f"{kind}-webgpu-f16") / "art"
    artifact = compile_model(CompileRequest(str(folder), "webgpu", "q0f16", output=out))
    return LLM(str(artifact), EngineConfig(kv_blocks=64))


def test_the_artifact_is_a_webgpu_plan_taking_m_rope_positions(llm, webgpu_artifact):
    encoder = read_encoder(webgpu_artifact)
    assert encoder.device == "webgpu" and encoder.library == "webgpu-plan.json"
    inputs = [i.name for i in llm.engine.runner.plan.functions[PREFILL].inputs]
    assert ROPE_POSITIONS in inputs


def test_a_shape_no_buffer_carries_reaches_its_kernel_as_a_scalar(webgpu_artifact):
    """The merger's rows (patches // 4) cannot be read off any buffer of its fused kernel, so
    the encoder's plan passes the patch count as a scalar expression."""
    plan = Plan.from_json((webgpu_artifact / "vision" / "webgpu-plan.json").read_text())
    steps = plan.functions[EMBED_IMAGE].steps
    scalar_calls = [s for s in steps if s.op == "call" and any(isinstance(a, dict) for a in s.args)]
    assert scalar_calls
    for step in scalar_calls:
        tir = plan.tir_functions[step.func]
        scalars = [i for i, a in enumerate(step.args) if isinstance(a, dict)]
        assert all(tir.params[i].shape is None for i in scalars)
        assert {(i, -1) for i in scalars} <= set(tir.shape_vars.values())
        assert [step.args[i] for i in scalars] == [{"expr": "patches"}] * len(scalars)


@pytest.mark.parametrize("size", SIZES)
def test_image_rows_match_transformers(llm, folder, reference, size):  # noqa: F811
    image = random_image(3, SIZES[size])
    rows = llm.engine.images.encoder.encode(image).rows
    want = _hf_rows(reference, hf_image_inputs(folder, image))
    assert rows.shape == want.shape
    assert np.abs(rows - want).max() <= TOL


@pytest.mark.parametrize("size", SIZES)
def test_image_prompt_logits_match_transformers(llm, folder, reference, size):  # noqa: F811
    # the cpu test's tolerance (1e-4) and image
    prompt_logits_match_transformers(llm, folder, reference, random_image(6, SIZES[size]))


@pytest.mark.parametrize("size", SIZES)
def test_greedy_tokens_match_transformers(llm, folder, reference, size):  # noqa: F811
    greedy_matches_transformers(llm, folder, reference, random_image(7, SIZES[size]))


def test_the_vulkan_target_runs_the_same_plan_on_a_vulkan_adapter(
    webgpu_artifact,
    folder,  # noqa: F811
    kind,  # noqa: F811
    reference,  # noqa: F811
    tmp_path_factory,
):
    out = tmp_path_factory.mktemp(f"{kind}-vulkan") / "art"
    artifact = compile_model(CompileRequest(str(folder), "vulkan", "q0f32", output=out))
    vulkan = LLM(str(artifact), EngineConfig(kv_blocks=64))
    assert vulkan.engine.runner.gpu.backend == "Vulkan"
    assert read_encoder(artifact).library == "webgpu-plan.json"
    greedy_matches_transformers(vulkan, folder, reference, random_image(7, SIZES["large"]))


@pytest.mark.parametrize("size", SIZES)
def test_f16_prompt_logits_are_close_to_transformers(f16_llm, folder, reference, size):  # noqa: F811
    assert read_encoder(f16_llm.engine.artifact.path).dtype == "float16"
    assert "shader-f16" in f16_llm.engine.runner.plan.features
    image = random_image(6, SIZES[size])
    ids, images = f16_llm.chat_inputs(_messages(image))
    got = _prompt_logits(f16_llm, ids, images)
    with torch.no_grad():
        want = reference(**_hf(f16_llm, folder, ids, [image])).logits[0].numpy()
    assert np.abs(got - want).max() <= TOL_F16
