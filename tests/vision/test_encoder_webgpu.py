"""The tiny Gemma 3 with images compiled for webgpu (f32) and run by the Python wgpu backend
(lavapipe here): `embed_image` from the encoder's WebGPU plan within 1e-4 of the cpu
artifact's rows, and the image+text prompt's 32 greedy tokens equal to the cpu artifact's."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.encoder import read_encoder
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.llm import LLM
from mlcx.runtime.sample.params import SamplingParams
from tests.vision.conftest import random_image

TOL = 1e-4


@pytest.fixture(scope="module")
def pair(vision_artifact, webgpu_vision):
    config = EngineConfig(kv_blocks=64)
    return LLM(str(vision_artifact), config), LLM(str(webgpu_vision), config)


def test_the_encoder_is_a_webgpu_plan(webgpu_vision):
    config = read_encoder(webgpu_vision)
    assert config.device == "webgpu" and config.library == "webgpu-plan.json"
    assert list((webgpu_vision / "vision" / "shaders").glob("*.wgsl"))


def test_image_rows_match_the_cpu_encoder(pair, photo):
    cpu, gpu = (llm.engine.images.encoder for llm in pair)
    for image in (photo, random_image(5)):
        want, got = cpu.encode(image).rows, gpu.encode(image).rows
        assert want.shape == got.shape == (4, 64)
        assert np.abs(want - got).max() <= TOL


def test_image_prompt_greedy_tokens_match_the_cpu_artifact(pair, photo):
    parts = [{"type": "text", "text": "what is this?"}, {"type": "image", "image": photo}]
    messages = [{"role": "user", "content": parts}]
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    answers = []
    for llm in pair:
        ids, images = llm.chat_inputs(messages)
        [[completion]] = llm.generate([ids], params, images=[images])
        answers.append(completion.token_ids)
    assert answers[0] == answers[1]
    assert len(set(answers[0])) > 4  # not a degenerate repeat
