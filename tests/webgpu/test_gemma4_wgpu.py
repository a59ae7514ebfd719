"""The tiny Gemma 4 with every switch on (tests/support/tiny_gemma4.py) through the webgpu plan
on wgpu (lavapipe here) against the cpu artifact of the same folder: one sequence's prompt
past the window and decode steps, and two sequences batched, within 1e-3. Its four page
buffers (six layers, two of them reading others' pages) come in two head geometries."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness, assert_backends_agree
from tests.support.reference_pages import reference_pages

TOL = 1e-3


@pytest.fixture(scope="module")
def pair(adapter, gemma4_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("gemma4_wgpu")
    folder = str(gemma4_model("everything"))
    return [
        compile_model(
            CompileRequest(folder, target, "q0f32", output=root / target, **reference_pages(target))
        )
        for target in ("cpu", "webgpu")
    ]


def test_logits_match_the_cpu_backend(pair):
    cpu, gpu = Harness(pair[0], num_blocks=32), Harness(pair[1], num_blocks=32)
    assert len(gpu.runner.kv_pages) == 4
    prompts = {1: np.random.default_rng(1).integers(3, 380, 40).tolist(), 2: [5, 9, 11]}
    assert_backends_agree(cpu, gpu, prompts, (17, 250, 3), TOL)
