"""The adapter kernels on the GPU targets: a WebGPU plan with adapter slots runs on wgpu
(lavapipe here) as the CPU artifact does, every row with its own adapter; the CUDA build
carries the shrink and expand kernels, GPU-shaped (thread-bound). (A plan without slots keeps
the plain step inputs: tests/webgpu/test_plan.py.)"""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.kernels.lora_layout import LoraSpec
from mlcx.kernels.step_params import LORA_WEIGHTS
from mlcx.runtime.backends.wgpu_runner import load_plan
from mlcx.runtime.lora.slots import LoraSlots
from mlcx.targets.cuda import SOURCE
from tests.lora.conftest import SPEC
from tests.support.harness import Harness

SLOTS = LoraSpec(2, 8)
FEEDS = {1: [5, 17, 42, 9, 100], 2: [3, 77, 250], 3: [31, 12, 8, 90, 7, 60]}
LORA = {1: (1, 1.0), 2: (2, 0.5), 3: (0, 0.0)}


def _harness(artifact, adapters) -> Harness:
    h = Harness(artifact, num_blocks=32)
    LoraSlots.load(Artifact(artifact), list(adapters.items()), h.runner)
    return h


def test_webgpu_plan_runs_each_rows_adapter_as_the_cpu(compiled, lora_artifact, adapters):
    import wgpu

    if not wgpu.gpu.enumerate_adapters_sync():
        pytest.skip("no wgpu adapter: run scripts/setup-system.sh (mesa-vulkan-drivers)")
    webgpu = compiled(SPEC, "q0f32", target="webgpu", lora_slots=SLOTS)
    plan = load_plan(Artifact(webgpu))
    assert LORA_WEIGHTS in [i.name for i in plan.functions["decode"].inputs]
    cpu, gpu = _harness(lora_artifact, adapters), _harness(webgpu, adapters)
    want, got = cpu.step(FEEDS, True, LORA), gpu.step(FEEDS, True, LORA)
    for seq in FEEDS:
        np.testing.assert_allclose(got[seq], want[seq], atol=1e-3)
    steps = {seq: 11 + seq for seq in FEEDS}
    want, got = cpu.decode(steps, LORA), gpu.decode(steps, LORA)
    for seq in FEEDS:
        np.testing.assert_allclose(got[seq], want[seq], atol=1e-3)


def test_the_cuda_build_has_thread_bound_adapter_kernels(compiled):
    artifact = compiled(SPEC, "q4f16", target="cuda", lora_slots=SLOTS)
    source = (artifact / SOURCE).read_text()
    kernels = re.findall(r"__global__ void (?:__launch_bounds__\((\d+)\) )?(lora_\w+)\(", source)
    names = {name for _, name in kernels}
    assert {re.sub(r"\d*_kernel$", "", n) for n in names} == {"lora_shrink", "lora_expand"}
    assert all(bounds in ("32", "64") for bounds, _ in kernels)  # a block of threads each
    assert Artifact(artifact).config.decode_graph_batch is None  # no graphs of one batch's rows
