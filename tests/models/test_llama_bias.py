"""Llama with attention_bias (biases on q, k, v and o) from a Hugging Face folder and from a
GGUF file, whose q/k biases llama.cpp's converter reorders with their rows, against HF
transformers. Large q/k biases make attention peaked, so a bias left out or in the wrong row
order moves the logits well past the tolerance. The folder is compiled; the f32 GGUF must
convert to its config and weights bit for bit (so its artifact is the folder's; CI time)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.gguf_vs_hf import F32, assert_matches_transformers, converted_weights
from tests.support.tiny_gguf import write_tiny_gguf
from tests.support.tiny_models import TinySpec, sharpened

SPEC = TinySpec(arch="llama", kv_heads=2, seed=81, extra={"attention_bias": True})


def _large_qk_biases(attn, gen) -> None:
    import torch

    for bias in (attn.q_proj.bias, attn.k_proj.bias):
        bias.copy_(2.0 * torch.randn(bias.shape, generator=gen))


@pytest.fixture(scope="module")
def folder(tiny_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("llama-bias")
    return sharpened(tiny_model(SPEC), root / "hf", SPEC.seed, _large_qk_biases)


def test_gguf_converts_to_the_folders_biases_and_weights(folder):
    path = write_tiny_gguf(folder, folder.parent / "f32.gguf", F32)
    (theirs, want), (ours, got) = converted_weights(folder), converted_weights(path)
    assert theirs.qkv_bias and theirs.o_bias
    assert replace(ours, rms_norm_eps=theirs.rms_norm_eps) == theirs
    assert got.keys() == want.keys() and "layers.1.attn.o.bias" in got
    for name, array in got.items():
        np.testing.assert_array_equal(array, want[name], err_msg=name)


def test_logits_and_greedy_tokens_match_transformers(folder):
    request = CompileRequest(
        str(folder), quantization="q0f32", output=folder.parent / "art", kv_dtype="float32"
    )
    assert_matches_transformers(folder, compile_model(request))
