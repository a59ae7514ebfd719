"""The wgpu runner's step buffers stay bounded under varied traffic (issue 32): its pool keeps
power-of-two size classes and reuses them, so rounds of the same mix of prompt lengths after the
first add no buffer, and every request's state is gone once the engine is idle."""

from __future__ import annotations

import numpy as np

from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams


def _round(llm: LLM, seed: int) -> None:
    rng = np.random.default_rng(seed)
    prompts = [rng.integers(3, 380, n).tolist() for n in (3, 17, 64, 130, 9, 200, 41)]
    params = SamplingParams(max_tokens=6, temperature=0.8, seed=seed, ignore_eos=True)
    llm.generate(prompts, params)


def test_rounds_of_varied_lengths_add_no_step_buffers(adapter, webgpu_artifact):
    llm = LLM(webgpu_artifact("q0f32"), EngineConfig(kv_blocks=96, prefill_chunk=64))
    _round(llm, 0)
    after_first = llm.engine.runner.memory().step_pool
    for seed in (1, 2, 3):
        _round(llm, seed)
    assert after_first and llm.engine.runner.memory().step_pool == after_first
    assert llm.engine.request_ids() == [] and len(llm.engine.kv) == 0
