"""The tiny gpt-oss's MXFP4 GGUF (tests/support/gpt_oss_builds.py) as a webgpu plan on the
local wgpu adapter (lavapipe here): the same logits as its cpu artifact to 1e-3 for a batched
prefill past the 16-token window, then decode steps (sinks, windows, MXFP4 experts and the
clamped SwiGLU in the GPU kernels); no kernel is left to dlight's Fallback."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.harness import Harness, assert_backends_agree
from tests.support.tiny_gpt_oss import PROMPT
from tests.targets.test_gpu_rules import _rules_used, _unfit

TOL = 1e-3


def test_webgpu_plan_matches_the_cpu_backend(adapter, gpt_oss):
    cpu, gpu = (Harness(gpt_oss.artifact("gguf", t), num_blocks=32) for t in ("cpu", "webgpu"))
    prompts = {1: np.random.default_rng(3).integers(3, 300, PROMPT).tolist(), 2: [5, 9, 11]}
    assert_backends_agree(cpu, gpu, prompts, (17, 250, 3), TOL)


@pytest.mark.parametrize("target", ["cuda", "webgpu"])
def test_no_kernel_falls_back(gpt_oss, target):
    assert _unfit(_rules_used(str(gpt_oss.gguf), target, "q4f16")) == {}
