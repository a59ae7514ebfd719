"""The MoE options: validated once with errors naming the problem; the gated activation as
text (the TE activation's annotation) and as math, against torch's GptOssExperts._apply_gate."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm import te

from mlcx.kernels.cpu.qexperts import ExpertSpec
from mlcx.kernels.moe import expert_glu_te
from mlcx.kernels.moe_options import GPT_OSS, GPT_OSS_GLU, SILU, GluActivation, MoEOptions
from mlcx.quantization.mxfp4 import Mxfp4Format


def test_gpt_oss_choices():
    assert GPT_OSS.router_bias and GPT_OSS.expert_bias and GPT_OSS.scoring == "topk_softmax"
    assert (GPT_OSS_GLU.alpha, GPT_OSS_GLU.limit, GPT_OSS_GLU.up_shift) == (1.702, 7.0, 1.0)
    assert SILU.plain and not GPT_OSS_GLU.plain and MoEOptions().glu == SILU


@pytest.mark.parametrize("glu", [SILU, GPT_OSS_GLU, GluActivation(0.5, None, -2.0)])
def test_activation_round_trips_through_its_annotation(glu):
    assert GluActivation.from_annotation(glu.annotation()) == glu


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MoEOptions(scoring="sigmoid"), "scoring 'sigmoid' is not one of"),
        (lambda: MoEOptions(scoring="topk_softmax", renormalize=True), "renormalize applies"),
        (lambda: GluActivation(alpha=0.0), "alpha must be positive"),
        (lambda: GluActivation(limit=-1.0), "limit must be positive"),
        (lambda: GluActivation(up_shift=float("nan")), "up_shift must be finite"),
        (
            lambda: ExpertSpec(Mxfp4Format(True), 4, 2, 64, 64, glu=GPT_OSS_GLU),
            "needs a SwiGLU input",
        ),
    ],
)
def test_bad_options_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_te_activation_matches_transformers_apply_gate():
    import tvm
    from transformers import GptOssConfig
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssExperts

    config = GptOssConfig(hidden_size=32, intermediate_size=16, num_local_experts=2)
    experts = GptOssExperts(config)
    gate_up = (np.random.default_rng(0).standard_normal((3, 2, 32)) * 6).astype(np.float32)
    # transformers reads gate and up interleaved; mlcx's stack holds gate first, then up
    interleaved = np.stack([gate_up[..., :16], gate_up[..., 16:]], axis=-1).reshape(3, 2, 32)
    want = experts._apply_gate(torch.from_numpy(interleaved)).numpy()
    holder = te.placeholder((3, 2, 32), "float32", name="gate_up")
    func = te.create_prim_func([holder, expert_glu_te(holder, GPT_OSS_GLU)])
    lib = tvm.compile(tvm.IRModule({"main": func}), "llvm")
    got = tvm.runtime.empty((3, 2, 16), "float32")
    lib["main"](tvm.runtime.tensor(gate_up), got)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
