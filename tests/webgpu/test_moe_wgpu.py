"""The tiny mixtures of experts (Qwen3-MoE, Mixtral, OLMoE) through the webgpu plan on wgpu
(lavapipe here) against HF transformers on the same weights: logits within 1e-4 over a
29-token prompt and 32 greedy steps with the same tokens.

A 29-token prompt routes 58 (token, slot) rows to 4 experts, more than the expert count, so
prefill takes the grouped path (rows sorted by expert on the device, one GEMM per expert's
rows: mlcx.kernels.gpu.experts); decode of one sequence routes 2 and takes the gathered GEMV.
A Q4_0/Q8_0 GGUF (`-q gguf`: the file's blocks, f32 math) runs the same kernels over
quantized stacked weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT

from mlcx.compile.model import CompileRequest
from mlcx.targets.webgpu_plan.schema import PLAN_FILE
from tests.support.compile_cache import compile_model
from tests.support.gguf_vs_hf import TOL, assert_matches_transformers
from tests.support.harness import Harness, hf_logits
from tests.support.tiny_models import load_reference
from tests.support.tiny_moe import QUANT_TYPES, rounded_folder, write_moe_gguf

# gate and up in one format, so the fused gate/up stack is a plain Q4_0 weight the grouped
# kernel reads (a Q4_0 + Q8_0 stack keeps the gathered TE GEMV)
EXPERT_Q4 = {**QUANT_TYPES, "ffn_up_exps.weight": GT.Q4_0}


@pytest.mark.parametrize("arch", ["qwen3_moe", "mixtral", "olmoe"])
def test_prompt_and_greedy_steps_match_transformers(adapter, moe_model, moe_compiled, arch):
    assert_matches_transformers(moe_model(arch), moe_compiled(arch, "q0f32", "webgpu"))


def test_batched_prefill_and_decode_route_each_token(adapter, moe_model, moe_compiled):
    """Two sequences in one step (grouped: 64 rows) and in batched decode (gathered: 4 rows)."""
    reference = load_reference(moe_model("qwen3_moe"))
    harness = Harness(moe_compiled("qwen3_moe", "q0f32", "webgpu"), num_blocks=32)
    prompts = {1: np.random.default_rng(1).integers(3, 380, 27).tolist(), 2: [5, 9, 11, 40, 7]}
    got = harness.step(prompts, all_rows=True)
    for seq, prompt in prompts.items():
        assert np.abs(got[seq] - hf_logits(reference, prompt)).max() <= TOL
    for token in (17, 250):
        got = harness.decode({1: token, 2: token})
        for seq in prompts:
            prompts[seq] = prompts[seq] + [token]
            assert np.abs(got[seq] - hf_logits(reference, prompts[seq])[-1]).max() <= TOL


def test_quantized_gguf_experts(adapter, moe_model, tmp_path):
    folder = moe_model("mixtral")
    path = write_moe_gguf(folder, tmp_path / "q.gguf", EXPERT_Q4)
    artifact = compile_model(CompileRequest(str(path), "webgpu", "gguf", output=tmp_path / "web"))
    plan = (artifact / PLAN_FILE).read_text()
    assert "gpu_experts_gate_up_" in plan and "gpu_experts_down_" in plan
    assert_matches_transformers(rounded_folder(folder, tmp_path / "rounded", EXPERT_Q4), artifact)
