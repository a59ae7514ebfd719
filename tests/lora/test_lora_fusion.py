"""With adapter slots on the CPU the adapted projections keep their fused inputs and residual
adds: each LoRA shrink computes the RMSNorm or SwiGLU it reads itself, and each expand feeding
a residual add adds its delta to the residual instead (mlcx.passes.cpu.fuse_lora), so no norm,
SwiGLU or residual add is left a kernel of its own and the base linears fuse them as without
slots. That the logits still match peft is tests/lora/test_lora_logits.py's."""

from __future__ import annotations

import tvm

from mlcx.compile.model import CompileRequest, export_model
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.kernels.lora_layout import LoraSpec
from mlcx.passes.pipeline_cpu import graph_passes
from tests.lora.conftest import SPEC


def _graph(source, lora_slots):
    exported = export_model(CompileRequest(str(source), lora_slots=lora_slots))
    with exported.tvm_target:
        passes = graph_passes(exported.tvm_target, LinearKernels.INT16)
        return tvm.transform.Sequential(passes)(exported.mod)["decode"].script()


def test_norms_and_swiglus_stay_fused_into_the_linears(lora_base):
    plain = _graph(lora_base, None)
    slots = _graph(lora_base, LoraSpec(2, 8))
    for op in ("R.nn.rms_norm(", "R.nn.silu(", "R.add("):
        assert op not in slots
    for fused in ("cpu_linear_rmsnorm_", "cpu_linear_swiglu_", "_residual"):
        assert slots.count(fused) == plain.count(fused) > 0
    # q/k/v and gate_up read an RMSNorm, down a SwiGLU: every shrink computes its own input
    assert slots.count("lora_shrink_rmsnorm_") == 2 * SPEC.layers
    assert slots.count("lora_shrink_swiglu_") == SPEC.layers
