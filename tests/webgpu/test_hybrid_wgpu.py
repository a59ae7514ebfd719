"""The hybrid families (tests/support/hybrid_models.py) through the GPU targets: the webgpu plan on
the local wgpu adapter (lavapipe here) equals the cpu artifact of the same folder to 1e-3 over
prompts that continue their states across steps (a prefill chunk, then one crossing the delta
rule's chunk edge), then batched decode steps; no kernel of any family is left to dlight's
Fallback on cuda or webgpu (the state kernels on every GPU target: tests/targets/
test_hybrid_targets.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.harness import Harness
from tests.support.hybrid_models import CHUNK, SPECS, compiled_hybrid, hybrid_folder
from tests.targets.test_gpu_rules import _rules_used, _unfit

TOL = 1e-3
# qwen3_5_moe's layers are qwen3_5's with experts (and a shared expert: two linears and a gate)
# in place of the MLP; experts on the webgpu plan are tests/webgpu/test_moe_wgpu.py's, and its
# kernels' fit is checked below. One plan per state-layer kind keeps the suite's time.
PLAN_CHECKS = [name for name in SPECS if name != "qwen3_5_moe"]


@pytest.mark.parametrize("name", PLAN_CHECKS)
def test_webgpu_plan_matches_the_cpu_backend(adapter, name, tmp_path_factory):
    cpu, gpu = (
        Harness(compiled_hybrid(tmp_path_factory, name, target=target), num_blocks=32)
        for target in ("cpu", "webgpu")
    )
    prompt = np.random.default_rng(3).integers(3, 300, 2 * CHUNK).tolist()
    steps = [{1: prompt[:60], 2: [5, 9, 11]}, {1: prompt[60:120], 2: [4]}]
    for feeds in steps:
        want, got = cpu.step(feeds, all_rows=True), gpu.step(feeds, all_rows=True)
        for seq in feeds:
            assert np.abs(want[seq] - got[seq]).max() <= TOL
    for token in (17, 250, 3):
        want, got = cpu.decode({1: token, 2: token}), gpu.decode({1: token, 2: token})
        for seq in (1, 2):
            assert np.abs(want[seq] - got[seq]).max() <= TOL


@pytest.mark.parametrize("target", ["cuda", "webgpu"])  # per target: test_hybrid_targets
@pytest.mark.parametrize("name", list(SPECS))
def test_no_kernel_falls_back(name, target, tmp_path_factory):
    folder = hybrid_folder(tmp_path_factory, name)
    assert _unfit(_rules_used(str(folder), target, "q4f16")) == {}
