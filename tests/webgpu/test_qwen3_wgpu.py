"""A tiny Qwen3 (q/k norms fused into the GPU RoPE + append kernel) on wgpu against the cpu
artifact of the same folder: prefill logits and decode steps within 1e-3."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness, assert_backends_agree
from tests.support.reference_pages import reference_pages
from tests.support.tiny_models import TinySpec, sharpen_qwen3

TOL = 1e-3
SPEC = TinySpec(arch="qwen3", kv_heads=2, seed=33, extra={"head_dim": 32})


@pytest.fixture(scope="module")
def pair(adapter, tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("qwen3_wgpu")
    folder = str(sharpen_qwen3(tiny_model(SPEC), root / "hf", SPEC.seed))
    return [
        compile_model(
            CompileRequest(folder, target, "q0f32", output=root / target, **reference_pages(target))
        )
        for target in ("cpu", "webgpu")
    ]


def test_logits_match_the_cpu_backend(pair):
    cpu, gpu = Harness(pair[0], num_blocks=32), Harness(pair[1], num_blocks=32)
    prompts = {1: np.random.default_rng(1).integers(3, 380, 27).tolist(), 2: [5, 9, 11]}
    assert_backends_agree(cpu, gpu, prompts, (17, 250, 3), TOL)
