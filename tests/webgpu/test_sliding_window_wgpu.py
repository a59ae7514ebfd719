"""Sliding-window models on wgpu against the cpu artifact of the same folder: a tiny Gemma 3
(local window 16 + global layer, GeGLU, sandwich norms), a Phi-3 (LongRoPE, window 16) and a
Mistral (every layer windowed, so the KV manager releases pages behind the window): a prompt
longer than the window in two chunks, then decode steps, logits within 1e-3."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness
from tests.support.reference_pages import reference_pages
from tests.support.tiny_models import GEMMA3_LOCAL_GLOBAL, TinySpec, sharpen_gemma3

TOL = 1e-3
SPECS = {
    "gemma3": TinySpec(
        arch="gemma3",
        kv_heads=2,
        seed=71,
        tie=True,
        extra=GEMMA3_LOCAL_GLOBAL,
    ),
    "phi3": TinySpec(
        arch="phi3",
        kv_heads=2,
        seed=72,
        extra={
            "sliding_window": 16,
            "original_max_position_embeddings": 64,
            "rope_parameters": {
                "rope_type": "longrope",
                "rope_theta": 10000.0,
                "short_factor": [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0],
                "long_factor": [1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0],
            },
        },
    ),
    "mistral": TinySpec(arch="mistral", kv_heads=1, seed=73, extra={"sliding_window": 16}),
}


@pytest.fixture(scope="module", params=list(SPECS))
def pair(request, adapter, tiny_model, tmp_path_factory):
    spec = SPECS[request.param]
    root = tmp_path_factory.mktemp(f"{request.param}_wgpu")
    folder = tiny_model(spec)
    if spec.arch == "gemma3":
        folder = sharpen_gemma3(folder, root / "hf", spec.seed)
    return [
        compile_model(
            CompileRequest(
                str(folder), target, "q0f32", output=root / target, **reference_pages(target)
            )
        )
        for target in ("cpu", "webgpu")
    ]


def test_logits_match_the_cpu_backend(pair):
    cpu, gpu = (Harness(art, num_blocks=16, release=True) for art in pair)
    prompt = np.random.default_rng(2).integers(3, 380, 70).tolist()
    for chunk in (prompt[:40], prompt[40:]):
        want, got = cpu.step({1: chunk}, all_rows=True), gpu.step({1: chunk}, all_rows=True)
        assert np.abs(want[1] - got[1]).max() <= TOL
    for token in (17, 250, 3, 90, 4):
        want, got = cpu.decode({1: token}), gpu.decode({1: token})
        assert np.abs(want[1] - got[1]).max() <= TOL
    assert cpu.kv.page_table(1) == gpu.kv.page_table(1)
