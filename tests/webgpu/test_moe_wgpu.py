"""A tiny Qwen3-MoE through the webgpu plan on wgpu (lavapipe here) against its cpu artifact:
the router's top-k and the gathered expert GEMVs (mlcx.passes.gpu's ExpertGEMV and RouterTopK
schedules) over prefill of two sequences at once and batched decode steps."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.harness import Harness

TOL = 1e-4  # f32 math on both sides


@pytest.fixture(scope="module")
def pair(adapter, moe_compiled):
    return moe_compiled("qwen3_moe", "q0f32"), moe_compiled("qwen3_moe", "q0f32", "webgpu")


def test_logits_match_the_cpu_backend(pair):
    cpu, gpu = Harness(pair[0], num_blocks=32), Harness(pair[1], num_blocks=32)
    prompts = {1: np.random.default_rng(1).integers(3, 380, 27).tolist(), 2: [5, 9, 11]}
    want, got = cpu.step(prompts, all_rows=True), gpu.step(prompts, all_rows=True)
    for seq in prompts:
        assert np.abs(want[seq] - got[seq]).max() <= TOL
    for token in (17, 250, 3):
        want, got = cpu.decode({1: token, 2: token}), gpu.decode({1: token, 2: token})
        for seq in prompts:
            assert np.abs(want[seq] - got[seq]).max() <= TOL
