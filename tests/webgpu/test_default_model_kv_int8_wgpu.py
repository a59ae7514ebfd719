"""`--kv-dtype int8` on the default model's WebGPU plan (SmolLM2-135M Q4_1, f32 math) on wgpu:
the same 32 greedy tokens as the plan's float32 cache (the CPU's check, on the GPU kernels)."""

from __future__ import annotations

import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.cli import compile_here
from tests.support.default_model import DEFAULT

pytestmark = pytest.mark.slow
PROMPT = "The history of the Roman Empire is"  # tests/models/test_default_model_kv_int8.py's
TOKENS = 32


@pytest.fixture(scope="module")
def int8_webgpu(tmp_path_factory, default_webgpu):
    out = tmp_path_factory.mktemp("default-webgpu-int8") / "smol-webgpu-int8"
    args = ("--target", "webgpu", "-q", "gguf", "--kv-dtype", "int8", "-o", str(out))
    result = compile_here(DEFAULT, *args)
    assert result.returncode == 0, result.stderr
    return out


def test_int8_kv_keeps_the_f32_caches_greedy_tokens(adapter, default_webgpu, int8_webgpu):
    params = SamplingParams.greedy(max_tokens=TOKENS, ignore_eos=True)
    config = EngineConfig(kv_blocks=8)
    [want] = LLM(str(default_webgpu), config).generate([PROMPT], params)[0].outputs
    [got] = LLM(str(int8_webgpu), config).generate([PROMPT], params)[0].outputs
    assert len(want.token_ids) == TOKENS
    assert got.token_ids == want.token_ids
