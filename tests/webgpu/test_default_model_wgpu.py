"""The default model (SmolLM2-135M, its Q4_1 GGUF blocks with f32 activations) on wgpu."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.cli import compile_here
from tests.support.default_model import DEFAULT
from tests.support.harness import Harness

pytestmark = pytest.mark.slow
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory, adapter, default_webgpu):
    # The cpu reference keeps float32 activations: its default int16 activations move logits
    # by ~1e-2, more than the 1e-3 this compares at.
    cpu = tmp_path_factory.mktemp("default-wgpu") / "cpu"
    args = ("--target", "cpu", "--quantization", "gguf", "--linear-kernels", "float")
    args += ("--kv-dtype", "float32")  # as the GPU side: the cache moves no logits
    result = compile_here(DEFAULT, *args, "-o", str(cpu))
    assert result.returncode == 0, result.stderr
    return {"cpu": cpu, "webgpu": default_webgpu}


def test_logits_match_the_cpu_backend(artifacts):
    cpu, gpu = Harness(artifacts["cpu"], 16), Harness(artifacts["webgpu"], 16)
    prompt = LLM(str(artifacts["cpu"]), EngineConfig(kv_blocks=16)).tokenizer.encode(PROMPT)
    want, got = cpu.step({0: prompt}, all_rows=True), gpu.step({0: prompt}, all_rows=True)
    assert np.abs(want[0] - got[0]).max() <= 1e-3
    for token in (7042, 30):
        assert np.abs(cpu.decode({0: token})[0] - gpu.decode({0: token})[0]).max() <= 1e-3


def test_greedy_tokens_equal_the_cpu_backend(artifacts):
    params = SamplingParams.greedy(max_tokens=6, ignore_eos=True)
    config = EngineConfig(kv_blocks=16)
    [want] = LLM(str(artifacts["cpu"]), config).generate([PROMPT], params)[0].outputs
    [got] = LLM(str(artifacts["webgpu"]), config).generate([PROMPT], params)[0].outputs
    assert got.token_ids == want.token_ids
