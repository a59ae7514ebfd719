"""The 2026 dense families (tests/support/zoo_models.py) through the GPU targets: the webgpu plan
on the local wgpu adapter (lavapipe here) equals the cpu artifact of the same folder to 1e-3
over a prompt past every window, then decode steps; on cuda and webgpu no kernel of any family
is left to dlight's Fallback."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness, assert_backends_agree
from tests.support.reference_pages import reference_pages
from tests.support.zoo_models import CASES, PROMPT, sharpened
from tests.targets.test_gpu_rules import _rules_used, _unfit

TOL = 1e-3


@pytest.fixture(scope="module", params=list(CASES))
def family(request, tiny_model, tmp_path_factory):
    spec, _ = CASES[request.param]
    root = tmp_path_factory.mktemp(f"{request.param}_wgpu")
    return request.param, sharpened(tiny_model(spec), root / "hf", spec.seed)


def test_webgpu_plan_matches_the_cpu_backend(adapter, family, tmp_path):
    _, folder = family
    cpu, gpu = (
        Harness(
            compile_model(
                CompileRequest(
                    str(folder),
                    target,
                    "q0f32",
                    output=tmp_path / target,
                    **reference_pages(target),
                )
            ),
            num_blocks=32,
        )
        for target in ("cpu", "webgpu")
    )
    prompts = {1: np.random.default_rng(3).integers(3, 300, PROMPT).tolist(), 2: [5, 9, 11]}
    assert_backends_agree(cpu, gpu, prompts, (17, 250, 3), TOL)


@pytest.mark.parametrize("target", ["cuda", "webgpu"])
def test_no_kernel_falls_back(family, target):
    _, folder = family
    assert _unfit(_rules_used(str(folder), target, "q4f16")) == {}
