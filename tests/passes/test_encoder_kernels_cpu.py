"""The image encoder's CPU pipeline (mlcx.passes.pipeline_cpu.encoder_cpu_pipeline): every
linear layer and the attention become hand-written kernels, and the encoder computes what
TVM's plain CPU build of the same module computes. The shapes are awkward on purpose: a
14x14 patch (588 features) and an MLP 40 wide, neither a whole number of the kernels' chunks
or tiles, which the kernels serve themselves (nothing pads around them)."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.target import codegen

from mlcx.frontends.encoders import ENCODERS
from mlcx.frontends.gemma3_vision.config import VisionConfig
from mlcx.kernels.cpu.kernel_config import KernelConfig
from mlcx.passes.cpu.encoder_kernels import encoder_kernels_cpu
from mlcx.passes.pipeline_cpu import encoder_cpu_pipeline
from mlcx.targets.cpu import llvm_target

TARGET = tvm.target.Target({"kind": "llvm", "num-cores": 2})
CONFIG = VisionConfig(
    image_size=56,
    patch_size=14,
    hidden_size=48,
    intermediate_size=40,
    num_layers=2,
    num_heads=4,
    layer_norm_eps=1e-6,
    mm_tokens_per_image=4,
    text_hidden_size=72,
    image_token_id=1,
    boi_token_id=2,
    eoi_token_id=3,
)


@pytest.fixture(scope="module")
def exported():
    module = ENCODERS["gemma3"].build(CONFIG, "float32")
    return module.export_tvm(spec=module.export_spec())


def _calls(mod: tvm.IRModule) -> list[str]:
    names: list[str] = []

    def visit(expr):
        if isinstance(expr, relax.Call):
            op = expr.op
            names.append(op.name if hasattr(op, "name") else str(op))
            if op.name == "relax.call_tir":
                names.append(expr.args[0].name_hint)

    relax.analysis.post_order_visit(mod["embed_image"], visit)
    return names


def test_linears_and_attention_become_kernels(exported):
    mod, _ = exported
    cfg = KernelConfig.for_target(TARGET)
    with TARGET:
        rewritten = encoder_kernels_cpu(cfg)(mod)
    calls = _calls(rewritten)
    assert "relax.matmul" not in calls and "relax.nn.softmax" not in calls
    assert "relax.nn.pad" not in calls and "relax.strided_slice" not in calls
    linears = [c for c in calls if c.startswith("cpu_linear_plain_float32")]
    # per layer q, k, v, o, fc1, fc2; the patch embedding; the projector
    assert len(linears) == 6 * CONFIG.num_layers + 2
    attention = "dense_attention_cpu_4x16x12" + ("_i16" if cfg.int16_pairs else "")
    assert calls.count(attention) == CONFIG.num_layers
    assert "relax.nn.gelu_tanh" not in calls
    assert calls.count("gelu_tanh_bias_cpu_16x40") == CONFIG.num_layers
    assert "relax.nn.layer_norm" not in calls  # two a layer and the last
    assert calls.count("layer_norm_cpu_16x48") == 2 * CONFIG.num_layers + 1


def _against_plain_build(exported, target, pipeline) -> float:
    """The largest difference between `pipeline`'s build and TVM's plain one on random weights
    and pixels, over the plain output's largest value."""
    mod, params = exported
    rng = np.random.default_rng(0)
    dev = tvm.cpu()
    weights = [
        tvm.runtime.tensor(rng.standard_normal([int(d) for d in p.shape]).astype("float32"), dev)
        for _, p in params
    ]
    pixels = tvm.runtime.tensor(rng.standard_normal((3, 56, 56)).astype("float32"), dev)
    outputs = []
    for each in (pipeline, None):
        built = tvm.compile(mod, target=target, relax_pipeline=each or "default")
        vm = relax.VirtualMachine(built, dev)
        outputs.append(vm["embed_image"](pixels, weights).numpy())
    return np.abs(outputs[0] - outputs[1]).max() / np.abs(outputs[1]).max()


def test_the_encoder_computes_what_tvms_plain_build_computes(exported):
    assert _against_plain_build(exported, TARGET, encoder_cpu_pipeline(TARGET)) <= 1e-5


HOST = llvm_target(codegen.llvm_get_system_cpu(), 2)


def test_int16_linears_are_opt_in(exported):
    mod, _ = exported
    target = llvm_target("sapphirerapids", 2, "x86_64-linux-gnu")
    cfg = KernelConfig.for_target(target)
    for opted, count in ((False, 0), (True, 6 * CONFIG.num_layers + 2)):
        with target:
            calls = _calls(encoder_kernels_cpu(cfg, int16_linears=opted)(mod))
        assert len([c for c in calls if c.startswith("cpu_linear") and c.endswith("_i16")]) == count


def test_int16_math_stays_near_tvms_plain_build(exported):
    """This CPU's int16 attention (and, opted in, linears) against TVM's float32 build: rows on
    12-bit codes move each output by a few 1e-4 of the largest."""
    pipeline = encoder_cpu_pipeline(HOST, int16_linears=True)
    assert _against_plain_build(exported, HOST, pipeline) <= 3e-3
