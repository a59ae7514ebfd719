"""The wgpu runner (lavapipe here) against the CPU runner on the same model and steps."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.harness import Harness
from tests.support.tiny_models import TinySpec

TOL = 1e-3
CASES = ["hf-q0f32", "gguf"]


@pytest.fixture(scope="module", params=CASES)
def pair(request, adapter, compiled, webgpu_artifact, gguf_artifact):
    if request.param == "gguf":
        return gguf_artifact("cpu"), gguf_artifact("webgpu")
    return compiled(TinySpec(), "q0f32"), webgpu_artifact("q0f32")


def _harnesses(pair):
    return Harness(pair[0], num_blocks=48), Harness(pair[1], num_blocks=48)


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].shape == b[key].shape
        assert np.abs(a[key] - b[key]).max() <= TOL, key


def _tokens(seed: int, n: int) -> list[int]:
    return np.random.default_rng(seed).integers(3, 380, n).tolist()


def test_ragged_prefill_then_batched_decode(pair):
    cpu, gpu = _harnesses(pair)
    prompts = {1: _tokens(1, 5), 2: _tokens(2, 23), 3: _tokens(3, 16)}
    _close(cpu.step(prompts, all_rows=True), gpu.step(prompts, all_rows=True))
    for step in range(3):
        nxt = {seq: _tokens(10 * step + seq, 1)[0] for seq in prompts}
        _close(cpu.decode(nxt), gpu.decode(nxt))


def test_chunked_prefill_over_cached_prefix(pair):
    cpu, gpu = _harnesses(pair)
    prompt = _tokens(5, 41)
    for start, end in [(0, 13), (13, 30), (30, 41)]:
        feed = {7: prompt[start:end]}
        _close(cpu.step(feed, all_rows=True), gpu.step(feed, all_rows=True))


def test_fork_copies_the_shared_page_on_write(pair):
    cpu, gpu = _harnesses(pair)
    for h in (cpu, gpu):
        h.step({20: _tokens(6, 21)})
        h.fork(20, 21)
    feed = {20: 11, 21: 12}
    _close(cpu.decode(feed), gpu.decode(feed))
    assert gpu.kv.page_table(20)[-1] != gpu.kv.page_table(21)[-1]
    more = {21: _tokens(9, 6)}
    _close(cpu.step(more, all_rows=True), gpu.step(more, all_rows=True))


def test_greedy_generation_matches_the_cpu_backend(pair):
    params = SamplingParams.greedy(max_tokens=12, ignore_eos=True)
    prompts = ["The capital of France is", "hello world"]
    config = EngineConfig(kv_blocks=32)
    want = LLM(str(pair[0]), config).generate(prompts, params)
    got = LLM(str(pair[1]), config).generate(prompts, params)
    assert [o.outputs[0].token_ids for o in got] == [o.outputs[0].token_ids for o in want]


def test_f16_artifact_matches_the_cpu_f16_artifact(adapter, compiled, webgpu_artifact):
    if "shader-f16" not in adapter.features:
        pytest.skip(f"{adapter.info['device']} has no shader-f16")
    cpu, gpu = _harnesses((compiled(TinySpec(), "q4f16"), webgpu_artifact("q4f16")))
    prompts = {1: _tokens(1, 9), 2: _tokens(2, 17)}
    _close(cpu.step(prompts, all_rows=True), gpu.step(prompts, all_rows=True))
    _close(cpu.decode({1: 5, 2: 6}), gpu.decode({1: 5, 2: 6}))


def test_q4f32_f16_scales_are_read_without_shader_f16(adapter, compiled, webgpu_artifact):
    """q4f32 keeps f16 scales; the f32 plan reads them through 32-bit words."""
    cpu, gpu = _harnesses((compiled(TinySpec(), "q4f32"), webgpu_artifact("q4f32")))
    prompts = {1: _tokens(3, 11)}
    _close(cpu.step(prompts, all_rows=True), gpu.step(prompts, all_rows=True))
    _close(cpu.decode({1: 7}), gpu.decode({1: 7}))


def test_vulkan_target_runs_the_same_plan_on_a_vulkan_adapter(adapter, compiled, webgpu_artifact):
    vulkan = compiled(TinySpec(), "q0f32", target="vulkan")
    web = Harness(webgpu_artifact("q0f32"), num_blocks=16)
    vk = Harness(vulkan, num_blocks=16)
    assert vk.runner.gpu.backend == "Vulkan"
    feed = {1: _tokens(4, 10)}
    _close(web.step(feed, all_rows=True), vk.step(feed, all_rows=True))
