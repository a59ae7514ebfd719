"""mlcx's q4/q8 group formats: the fused dequantize-matmul kernels against HF transformers
running on the same dequantized weights (read back from the artifact's shards with numpy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm.target import codegen

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.kernels.cpu.kernel_config import LinearKernels, has_int8_dot
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.schemes import QUANTIZATIONS
from mlcx.targets.base import BuildOptions
from tests.support.harness import Harness, hf_logits
from tests.support.tiny_models import TinySpec, load_reference

SPEC = TinySpec(arch="llama", tie=False, kv_heads=2, seed=4)
HOST = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu()})
HAS_VNNI = has_int8_dot(HOST)


def _dequantized_reference(folder, artifact_dir, quantization: str):
    """HF model whose matrices are replaced by the artifact's weights, unpacked in numpy."""
    formats = Artifact(artifact_dir).config.weight_formats
    # the quantization's format, stored row-tiled where the CPU int16 kernels read it
    assert {format_from_name(f).row_major for f in formats.values()} == {
        QUANTIZATIONS[quantization].weight_format
    }
    arrays = dict(load_arrays(Artifact(artifact_dir).params_dir))
    model = load_reference(folder)
    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads

    def unpack(target):
        params = {n.rsplit(".", 1)[1]: a for n, a in arrays.items() if n.startswith(target + ".")}
        return torch.from_numpy(format_from_name(formats[target]).unpack(params))

    state = model.state_dict()
    state["model.embed_tokens.weight"] = unpack("embed")
    state["lm_head.weight"] = unpack("lm_head")
    splits = [cfg.num_attention_heads * head_dim, cfg.num_key_value_heads * head_dim]
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        q, k, v = np.split(unpack(f"layers.{i}.attn.qkv").numpy(), np.cumsum(splits))
        for name, w in zip("qkv", (q, k, v), strict=True):
            state[f"{p}self_attn.{name}_proj.weight"] = torch.from_numpy(w)
        state[p + "self_attn.o_proj.weight"] = unpack(f"layers.{i}.attn.o")
        gate, up = np.split(unpack(f"layers.{i}.mlp.gate_up").numpy(), 2)
        state[p + "mlp.gate_proj.weight"] = torch.from_numpy(gate)
        state[p + "mlp.up_proj.weight"] = torch.from_numpy(up)
        state[p + "mlp.down_proj.weight"] = unpack(f"layers.{i}.mlp.down")
    model.load_state_dict(state)
    return model


@pytest.mark.parametrize("linear_kernels", [LinearKernels.INT16, LinearKernels.FLOAT])
@pytest.mark.parametrize("quantization", ["q4f32", "q8f32"])
def test_quantized_logits_match_dequantized_reference(
    quantization, linear_kernels, tiny_model, compiled
):
    options = BuildOptions(linear_kernels=linear_kernels)
    artifact = compiled(SPEC, quantization, options=options)
    ref = _dequantized_reference(tiny_model(SPEC), artifact, quantization)
    harness = Harness(artifact, num_blocks=32)
    prompt = np.random.default_rng(1).integers(0, ref.config.vocab_size, 27).tolist()
    got = harness.step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(ref, prompt)).max() <= 1e-4
    token = int(np.argmax(got[-1]))
    got = harness.decode({0: token})[0]
    assert np.abs(got - hf_logits(ref, prompt + [token])[-1]).max() <= 1e-4


def test_quantization_error_is_bounded(tiny_model, compiled):
    """Sanity on the packing itself: q4 logits stay near the fp32 model's."""
    ref = load_reference(tiny_model(SPEC))
    harness = Harness(compiled(SPEC, "q4f32"), num_blocks=32)
    prompt = np.random.default_rng(2).integers(0, ref.config.vocab_size, 12).tolist()
    got = harness.step({0: prompt}, all_rows=True)[0]
    exact = hf_logits(ref, prompt)
    assert 0 < np.abs(got - exact).max() < 0.3 * np.abs(exact).max()


@pytest.mark.skipif(not HAS_VNNI, reason="int8 kernels need AVX512-VNNI")
def test_int8_prefill_stays_near_the_dequantized_reference(tiny_model, compiled):
    """--linear-kernels int8: a 27-token prefill takes int8 activations (int8 rounding, not
    int16's 1e-4), a one-token decode after it int16 again."""
    options = BuildOptions(linear_kernels=LinearKernels.INT8)
    artifact = compiled(SPEC, "q4f32", options=options)
    ref = _dequantized_reference(tiny_model(SPEC), artifact, "q4f32")
    harness = Harness(artifact, num_blocks=32)
    prompt = np.random.default_rng(1).integers(0, ref.config.vocab_size, 27).tolist()
    got = harness.step({0: prompt}, all_rows=True)[0]
    want = hf_logits(ref, prompt)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert 1e-4 < err < 2e-2
    assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.9
