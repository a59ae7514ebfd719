"""Mixtures of experts (Qwen3-MoE, Mixtral, OLMoE) from Hugging Face folders and GGUF files
against HF transformers on the same weights.

Each tiny random model (2 layers, 4 experts, top-2; routing made decisive and the norms unit
scale: tests/support/tiny_moe.py) is compiled for cpu from its folder (q0f32) and from a
Q4_0/Q8_0 GGUF with the experts stacked as llama.cpp writes them (`ffn_*_exps`), gate and up
in different types (kept as a stack of both formats). Each must match transformers to 1e-4 over
a 29-token prompt and 32 greedy steps with the same tokens; the quantized file against
transformers on the same rounded weights. The f32 GGUF must convert to the folder's config
and weights bit for bit, so its artifact is the folder's (not compiled again: CI time).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.compile.model import CompileRequest
from mlcx.errors import UnsupportedModelError
from mlcx.frontends import registry
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.source import load_source
from mlcx.kernels.cpu.kernel_config import LinearKernels
from mlcx.targets.base import BuildOptions
from tests.support.compile_cache import compile_model
from tests.support.gguf_vs_hf import TOL, assert_matches_transformers, converted_weights
from tests.support.harness import Harness, hf_logits
from tests.support.tiny_models import load_reference
from tests.support.tiny_moe import QUANT_TYPES, rounded_folder, write_moe_gguf

ARCHS = ["qwen3_moe", "mixtral", "olmoe"]
# the quantized file runs the float linear kernels: the int16 kernels round activations by
# about 1e-4 of these logits (as for Qwen3 and Gemma 3)
FLOAT_KERNELS = BuildOptions(linear_kernels=LinearKernels.FLOAT)


@pytest.fixture(scope="module", params=ARCHS)
def case(request, moe_model, moe_compiled, tmp_path_factory):
    """(arch, folder, f32 gguf, the folder's artifact, rounded folder, the quantized gguf's
    artifact)"""
    arch = request.param
    root = tmp_path_factory.mktemp(f"moe-{arch}")
    folder = moe_model(arch)
    path = write_moe_gguf(folder, root / "f32.gguf")
    hf_art = moe_compiled(arch, "q0f32")
    quantized = write_moe_gguf(folder, root / "q.gguf", QUANT_TYPES)
    request_q = CompileRequest(
        str(quantized), output=root / "q-art", kv_dtype="float32", options=FLOAT_KERNELS
    )
    q_art = compile_model(request_q)
    rounded = rounded_folder(folder, root / "rounded", QUANT_TYPES)
    return arch, folder, path, hf_art, rounded, q_art


def test_f32_gguf_converts_to_the_folders_config_and_weights(case):
    """So its artifact is the folder's, whose logits the next test holds to transformers (the
    graph is built from the config and the weight formats alone)."""
    arch, folder, path, *_ = case
    (theirs, want), (ours, got) = converted_weights(folder), converted_weights(path)
    assert load_source(str(path)).arch.name == arch
    assert np.float32(ours.rms_norm_eps) == np.float32(theirs.rms_norm_eps)  # f32 in GGUF
    assert replace(ours, rms_norm_eps=theirs.rms_norm_eps) == theirs
    assert (theirs.num_experts, theirs.experts_per_token) == (4, 2)
    assert theirs.norm_topk_prob == (arch != "olmoe")
    assert got.keys() == want.keys()
    for name, array in got.items():
        np.testing.assert_array_equal(array, want[name], err_msg=name)
    gate_up = got["layers.1.moe.gate_up.weight"]
    assert gate_up.shape == (2 * 4 * theirs.expert_intermediate_size, 64)


@pytest.mark.parametrize("source", ["hf", "gguf-q"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    _, folder, _, hf_art, rounded, q_art = case
    reference, artifact = (folder, hf_art) if source == "hf" else (rounded, q_art)
    assert_matches_transformers(reference, artifact)


def test_quantized_experts_keep_the_files_blocks(case):
    formats = Artifact(case[-1]).config.weight_formats
    assert formats["layers.0.moe.gate_up"].startswith("stack(")  # Q4_0 gate, Q8_0 up
    assert "int4" in formats["layers.0.moe.gate_up"] and "int8" in formats["layers.0.moe.gate_up"]
    assert "int8" in formats["layers.0.moe.down"]


def test_batched_prefill_and_decode_route_each_token(case):
    """Two sequences in one step each get their own experts."""
    _, folder, _, hf_art, *_ = case
    reference = load_reference(folder)
    harness = Harness(hf_art, num_blocks=32)
    prompts = {1: [5, 9, 11, 40, 7], 2: [300, 12, 99]}
    got = harness.step(prompts, all_rows=True)
    decoded = harness.decode({1: 17, 2: 250})
    for seq, prompt in prompts.items():
        assert np.abs(got[seq] - hf_logits(reference, prompt)).max() <= TOL
        want = hf_logits(reference, prompt + [17 if seq == 1 else 250])[-1]
        assert np.abs(decoded[seq] - want).max() <= TOL


def test_unsupported_moe_variants_name_the_architecture():
    with pytest.raises(UnsupportedModelError, match="Qwen2MoeForCausalLM"):
        registry.for_hf("Qwen2MoeForCausalLM")
    with pytest.raises(UnsupportedModelError, match="'qwen2moe'"):
        registry.for_gguf("qwen2moe", has_experts=True)
    with pytest.raises(UnsupportedModelError, match="'olmoe' as a dense model"):
        registry.for_gguf("olmoe", has_experts=False)
    assert registry.for_gguf("llama", has_experts=True).name == "mixtral"
    assert registry.for_gguf("llama").name == "llama"
    supported = registry.describe_supported()  # in `mlcx compile --help`
    assert all(name in supported for name in ("Qwen3MoeForCausalLM", "qwen3moe", "olmoe"))
    from_hf = registry.families()["qwen3_moe"].config_from_hf

    with pytest.raises(UnsupportedModelError, match="qwen3_moe: dense layers"):
        from_hf({"mlp_only_layers": [0]})
    with pytest.raises(UnsupportedModelError, match="qwen3_moe: shared experts"):
        from_hf({"shared_expert_intermediate_size": 64})


def test_expert_config_is_validated():
    base = dict(
        vocab_size=8, hidden_size=8, intermediate_size=8, num_layers=1, num_heads=1,
        num_kv_heads=1, head_dim=8, context_window=8,
    )  # fmt: skip
    with pytest.raises(ValueError, match="experts per token"):
        DecoderConfig(**base, num_experts=4, experts_per_token=5, expert_intermediate_size=8)
    with pytest.raises(ValueError, match="qk_norm_scope"):
        DecoderConfig(**base, qk_norm_scope="row")
    assert not DecoderConfig(**base).is_moe


def test_per_expert_tensors_of_old_conversions_are_refused(tmp_path):
    """Mixtral files from before llama.cpp stacked the experts hold blk.N.ffn_gate.E.weight."""
    from mlcx.bench.workloads.random_models import LlamaShape, llama_writer

    writer = llama_writer(LlamaShape(64, 64, 1, 4, 2, 32), tmp_path / "old.gguf")
    writer.add_expert_count(4)
    writer.add_expert_used_count(2)
    writer.add_tensor("blk.0.ffn_gate.0.weight", np.zeros((64, 64), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(UnsupportedModelError, match="one tensor per expert"):
        load_source(str(tmp_path / "old.gguf"))


def test_default_cpu_kernels_on_the_quantized_file(moe_model, tmp_path):
    """`mlcx compile x.gguf` as users run it: the int16 linear kernels for attention and head
    (their activation rounding: 1e-3), the expert weights row-tiled like every linear's."""
    folder = moe_model("mixtral")
    path = write_moe_gguf(folder, tmp_path / "q.gguf", QUANT_TYPES)
    artifact = compile_model(CompileRequest(str(path), output=tmp_path / "art", kv_dtype="float32"))
    assert Artifact(artifact).config.linear_kernels == LinearKernels.INT16.value
    reference = load_reference(rounded_folder(folder, tmp_path / "rounded", QUANT_TYPES))
    prompt = np.random.default_rng(9).integers(0, reference.config.vocab_size, 21).tolist()
    got = Harness(artifact, num_blocks=32).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= 1e-3
    # mlcx's expert kernel (rows grouped by expert) for the down projection, reading
    # silu(gate) * up; the gate/up stack mixes Q4_0 and Q8_0, which only the TE GEMV reads
    library = (Path(artifact) / "model-cpu.so").read_bytes()
    assert b"cpu_experts_down_swiglu_" in library and b"cpu_experts_gate_up_" not in library


def test_the_decode_bound_counts_the_routed_experts_share(case):
    """`mlcx bench`'s bytes per decode token: every expert's weights times top-k / experts,
    against the dense equivalent (every expert), from the HF config's shapes."""
    import json

    from mlcx.bench.measure.mlcx_engine import expert_notes, weight_bytes_per_token

    _, folder, _, hf_art, _, _ = case
    hf = json.loads((folder / "config.json").read_text())
    experts, k = hf.get("num_local_experts") or hf["num_experts"], hf["num_experts_per_tok"]
    width = hf.get("moe_intermediate_size") or hf["intermediate_size"]
    expert_bytes = hf["num_hidden_layers"] * 3 * experts * width * hf["hidden_size"] * 4  # f32
    artifact = Artifact(hf_art)
    routed, dense = weight_bytes_per_token(artifact), weight_bytes_per_token(artifact, False)
    assert dense - routed == pytest.approx(expert_bytes * (1 - k / experts), abs=1)
    assert f"{k} of {experts} experts" in expert_notes(artifact, routed)[0]
