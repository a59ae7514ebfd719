"""The CPU graph passes fuse a Qwen3's q/k norms with RoPE and the KV append, one kernel a
layer, for float and block-quantized weights (the GPU side: tests/targets/test_qwen3_targets)."""

from __future__ import annotations

import pytest
import tvm

from mlcx.compile.model import CompileRequest, export_model
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.passes.pipeline_cpu import graph_passes
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(arch="qwen3", kv_heads=2, seed=35, extra={"head_dim": 32})


@pytest.mark.parametrize("quantization", ["q0f32", "q4f32"])
def test_qwen3_norms_fuse_into_rope_append_on_cpu(tiny_model, quantization):
    exported = export_model(CompileRequest(str(tiny_model(SPEC)), quantization=quantization))
    with exported.tvm_target:
        passes = graph_passes(exported.tvm_target, LinearKernels.INT16)
        mod = tvm.transform.Sequential(passes)(exported.mod)
    ropes = {g.name_hint for g in mod.functions if "rope" in g.name_hint}
    assert ropes == {"rope_append_cpu"}
    calls = mod["prefill"].script().count("rope_append_cpu")
    assert calls == SPEC.layers
