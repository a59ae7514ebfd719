"""Qwen2 from a GGUF file (llama.cpp arch `qwen2`) against HF transformers on the same weights.

A tiny random Qwen2 (non-zero q/k/v biases, tied and untied heads) is saved by transformers and
written again as an f32 GGUF with the `gguf` writer, the way llama.cpp's converter names it
(no q/k row permutation, `blk.N.attn_q.bias`, `qwen2.*` metadata). Both are compiled for cpu;
each must match transformers to 1e-4 in fp32 and pick the same 32 greedy tokens.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

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
from tests.support.tiny_models import TinySpec, load_reference

TOL = 1e-4
GREEDY = 32
SPECS = [
    TinySpec(arch="qwen2", tie=False, kv_heads=2, seed=21),
    TinySpec(arch="qwen2", tie=True, kv_heads=1, seed=22),
]
F32 = {"weight": GT.F32}


def _sharpened(src: Path, dst: Path, seed: int) -> Path:
    """A copy whose attention is far from uniform, so q/k layout and RoPE errors show.

    The tiny models' random norm weights (~0.08) make every attention score near zero, and a
    wrong q/k row order would then pass; unit-scale norms and larger biases prevent that."""
    import torch

    shutil.copytree(src, dst)
    model = load_reference(src)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in model.model.layers:
            norm = layer.input_layernorm.weight
            norm.copy_(1.0 + 0.1 * torch.randn(norm.shape, generator=gen))
            layer.self_attn.q_proj.bias.mul_(4.0)
            layer.self_attn.k_proj.bias.mul_(4.0)
    model.save_pretrained(dst)
    return dst


@pytest.fixture(scope="module", params=SPECS, ids=lambda s: f"tie{int(s.tie)}")
def case(request, tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("qwen2_gguf")
    folder = _sharpened(tiny_model(request.param), root / "hf", request.param.seed)
    path = write_tiny_gguf(folder, root / "tiny-qwen2.gguf", F32)
    artifacts = [
        compile_model(CompileRequest(model=str(model), output=root / name, quantization=quant))
        for model, name, quant in ((path, "gguf-art", None), (folder, "hf-art", "q0f32"))
    ]
    return folder, path, *artifacts


def test_biases_are_nonzero_and_in_the_file(case):
    folder, path, *_ = case
    reference = load_reference(folder)
    assert float(reference.model.layers[0].self_attn.q_proj.bias.detach().abs().max()) > 0.01
    names = load_source(str(path)).tensors.names()
    assert {"blk.1.attn_q.bias", "blk.1.attn_k.bias", "blk.1.attn_v.bias"} <= set(names)
    assert ("output.weight" in names) != reference.config.tie_word_embeddings


def test_config_and_weights_equal_the_hf_folders(case):
    folder, path, gguf_artifact, hf_artifact = case
    gguf_source, hf_source = load_source(str(path)), load_source(str(folder))
    assert gguf_source.arch.name == hf_source.arch.name == "qwen2"
    ours_cfg, theirs_cfg = gguf_source.config, hf_source.config
    # GGUF stores the epsilon as float32
    assert np.float32(ours_cfg.rms_norm_eps) == np.float32(theirs_cfg.rms_norm_eps)
    assert replace(ours_cfg, rms_norm_eps=theirs_cfg.rms_norm_eps) == theirs_cfg
    ours = dict(load_arrays(Artifact(gguf_artifact).params_dir))
    theirs = dict(load_arrays(Artifact(hf_artifact).params_dir))
    assert ours.keys() == theirs.keys()
    assert any(name.endswith("attn.qkv.bias") for name in ours)
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


def test_chat_template_comes_from_the_file(case):
    folder, path, *_ = case
    from transformers import AutoTokenizer

    assets = load_source(str(path)).tokenizer_assets()
    assert assets.chat_template == AutoTokenizer.from_pretrained(folder).chat_template


def test_unsupported_gguf_architecture_lists_qwen2():
    with pytest.raises(UnsupportedModelError, match=r"gemma3.*llama, qwen2"):
        registry.for_gguf("gemma3")


def test_block_quantized_file_matches_transformers_gguf_loader(case, tmp_path):
    """Q4_0/Q4_1/Q8_0 tensors as in a downloaded file: mlcx keeps the blocks, transformers
    dequantizes the same file with the `gguf` package; both then compute in fp32."""
    import torch
    from transformers import AutoModelForCausalLM

    folder, *_ = case
    path = write_tiny_gguf(folder, tmp_path / "q.gguf")
    artifact = compile_model(CompileRequest(model=str(path), output=tmp_path / "art"))
    reference = AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, dtype=torch.float32
    ).eval()
    assert Artifact(artifact).config.weight_formats["layers.0.mlp.down"] == "int8-sym-g32-float16"
    prompt = np.random.default_rng(8).integers(0, reference.config.vocab_size, 21).tolist()
    got = Harness(artifact, num_blocks=32).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL
