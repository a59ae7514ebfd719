"""Qwen3 from a Hugging Face folder and from a GGUF file (llama.cpp arch `qwen3`) against HF
transformers on the same weights.

A tiny random Qwen3 (head_dim 32 while hidden / heads is 16, tied and untied heads) gets
unit-scale layer norms and q/k norm weights far from one another and from 1, so attention is
peaked: a missing or misplaced q/k norm, or a wrong q/k row order, moves the logits well past the
tolerance. It is written again as an f32 GGUF the way llama.cpp's converter names it
(`blk.N.attn_q_norm.weight`, `qwen3.attention.key_length`). Both are compiled for cpu; each must
match transformers to 1e-4 in fp32 and pick the same 32 greedy tokens.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.compile import CompileRequest, compile_model
from mlcx.errors import UnsupportedModelError
from mlcx.frontends import registry
from mlcx.frontends.source import load_source
from tests.support.harness import Harness, hf_logits
from tests.support.tiny_gguf import write_tiny_gguf
from tests.support.tiny_models import TinySpec, load_reference, sharpen_qwen3

TOL = 1e-4
GREEDY = 32
HEAD_DIM = 32
SPECS = [
    TinySpec(arch="qwen3", tie=False, kv_heads=2, seed=31, extra={"head_dim": HEAD_DIM}),
    TinySpec(arch="qwen3", tie=True, kv_heads=1, seed=32, extra={"head_dim": HEAD_DIM}),
]
F32 = {"weight": GT.F32}


@pytest.fixture(scope="module", params=SPECS, ids=lambda s: f"tie{int(s.tie)}")
def case(request, tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("qwen3")
    folder = sharpen_qwen3(tiny_model(request.param), root / "hf", request.param.seed)
    path = write_tiny_gguf(folder, root / "tiny-qwen3.gguf", F32)
    artifacts = [
        compile_model(CompileRequest(model=str(model), output=root / name, quantization=quant))
        for model, name, quant in ((path, "gguf-art", None), (folder, "hf-art", "q0f32"))
    ]
    return folder, path, *artifacts


def test_head_dim_and_qk_norms_are_in_the_file(case):
    folder, path, *_ = case
    reference = load_reference(folder)
    assert reference.config.head_dim != reference.config.hidden_size // 4
    names = load_source(str(path)).tensors.names()
    assert {"blk.1.attn_q_norm.weight", "blk.1.attn_k_norm.weight"} <= set(names)
    assert not any(name.endswith(".bias") for name in names)
    assert ("output.weight" in names) != reference.config.tie_word_embeddings


def test_config_and_weights_equal_the_hf_folders(case):
    folder, path, gguf_artifact, hf_artifact = case
    gguf_source, hf_source = load_source(str(path)), load_source(str(folder))
    assert gguf_source.arch.name == hf_source.arch.name == "qwen3"
    ours_cfg, theirs_cfg = gguf_source.config, hf_source.config
    assert theirs_cfg.head_dim == HEAD_DIM and theirs_cfg.qk_norm
    # GGUF stores the epsilon as float32
    assert np.float32(ours_cfg.rms_norm_eps) == np.float32(theirs_cfg.rms_norm_eps)
    assert replace(ours_cfg, rms_norm_eps=theirs_cfg.rms_norm_eps) == theirs_cfg
    ours = dict(load_arrays(Artifact(gguf_artifact).params_dir))
    theirs = dict(load_arrays(Artifact(hf_artifact).params_dir))
    assert ours.keys() == theirs.keys()
    assert {"layers.1.attn.q_norm.weight", "layers.1.attn.k_norm.weight"} <= ours.keys()
    for name, array in ours.items():
        np.testing.assert_array_equal(array, theirs[name], err_msg=name)


def _greedy_hf(reference, prompt: list[int]) -> tuple[list[int], list[np.ndarray]]:
    seq, rows = list(prompt), []
    for _ in range(GREEDY):
        row = hf_logits(reference, seq)[-1]
        rows.append(row)
        seq.append(int(np.argmax(row)))
    return seq[len(prompt) :], rows


@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    folder, _, gguf_artifact, hf_artifact = case
    reference = load_reference(folder)
    harness = Harness(gguf_artifact if source == "gguf" else hf_artifact, num_blocks=32)
    prompt = np.random.default_rng(7).integers(0, reference.config.vocab_size, 29).tolist()
    got = harness.step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL
    want_tokens, want_rows = _greedy_hf(reference, prompt)
    tokens, row = [], got[-1]
    for want_row in want_rows:
        assert np.abs(row - want_row).max() <= TOL
        tokens.append(int(np.argmax(row)))
        row = harness.decode({0: tokens[-1]})[0]
    assert tokens == want_tokens


def test_unsupported_architectures_list_qwen3():
    with pytest.raises(UnsupportedModelError, match=r"Qwen3ForCausalLM"):
        registry.for_hf("Gemma3ForCausalLM")
    with pytest.raises(UnsupportedModelError, match=r"llama, qwen2, qwen3"):
        registry.for_gguf("gemma3")


def test_attention_bias_is_refused():
    from mlcx.frontends.qwen3.config import from_hf

    with pytest.raises(UnsupportedModelError, match="attention_bias"):
        from_hf({"attention_bias": True})


def test_block_quantized_file_matches_transformers_gguf_loader(case, tmp_path):
    """Q4_0/Q4_1/Q8_0 tensors as in a downloaded file (the q/k norms stay f32, as llama.cpp
    keeps 1-D tensors): mlcx keeps the blocks, transformers dequantizes the same file with the
    `gguf` package; both then compute in fp32."""
    import torch
    from transformers import AutoModelForCausalLM

    folder, *_ = case
    path = write_tiny_gguf(folder, tmp_path / "q.gguf")
    artifact = compile_model(CompileRequest(model=str(path), output=tmp_path / "art"))
    # transformers' GGUF config mapping ignores qwen3.attention.key_length: head_dim is given
    reference = AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, dtype=torch.float32, head_dim=HEAD_DIM
    ).eval()
    assert Artifact(artifact).config.weight_formats["layers.0.mlp.down"] == "int8-sym-g32-float16"
    prompt = np.random.default_rng(8).integers(0, reference.config.vocab_size, 21).tolist()
    got = Harness(artifact, num_blocks=32).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL
