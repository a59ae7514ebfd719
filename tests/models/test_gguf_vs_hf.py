"""The GGUF path against HF transformers' own GGUF loader.

A tiny random Llama is written as a llama.cpp-style GGUF (Q4_0, Q4_1, Q8_0, F16 and F32
tensors; q/k rows permuted as llama.cpp does). mlcx compiles it keeping the block formats;
transformers dequantizes the same file with the `gguf` package and un-permutes on its own.
Both compute in fp32 on the same values, so logits must agree to 1e-4.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT

from mlcx.artifact.config import Artifact
from mlcx.artifact.weight_shards import load_arrays
from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness, hf_logits
from tests.support.reference_pages import reference_pages
from tests.support.tiny_gguf import DEFAULT_TYPES, write_tiny_gguf
from tests.support.tiny_models import TinySpec

SPEC = TinySpec(arch="llama", tie=False, kv_heads=2, seed=11)


@pytest.fixture(scope="module")
def gguf_file(tiny_model, tmp_path_factory):
    return write_tiny_gguf(tiny_model(SPEC), tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="module")
def reference(gguf_file):
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32
    ).eval()


@pytest.fixture(scope="module")
def artifact(gguf_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf_art") / "a"
    return compile_model(CompileRequest(model=str(gguf_file), output=out, **reference_pages()))


def test_block_formats_are_kept(artifact):
    formats = Artifact(artifact).config.weight_formats
    assert Artifact(artifact).config.quantization == "gguf"
    # the blocks' codes and scales as they are, row-tiled for the CPU kernels
    assert formats["embed"] == "int8-sym-g32-float16-t16"  # Q8_0
    assert formats["layers.0.mlp.gate_up"] == "int4-affine-g32-float16-t16"  # Q4_1 + Q4_1
    assert formats["layers.0.mlp.down"] == "int8-sym-g32-float16-t16"  # Q8_0
    assert formats["lm_head"] == "float32"  # F16 is widened for f32 math
    # q (Q4_0), k (Q4_1), v (Q8_0) differ: the fused qkv keeps each in its own format
    assert formats["layers.0.attn.qkv"] == (
        "stack(64xint4-sym-g32-float16-t16,32xint4-affine-g32-float16-t16,"
        "32xint8-sym-g32-float16-t16)"
    )


def test_logits_match_transformers(artifact, reference):
    harness = Harness(artifact, num_blocks=32)
    prompt = np.random.default_rng(0).integers(0, reference.config.vocab_size, 29).tolist()
    got = harness.step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= 1e-4
    seq = list(prompt)
    for _ in range(5):
        token = int(np.argmax(got[-1]))
        seq.append(token)
        got = harness.decode({0: token})[0][None]
        assert np.abs(got[0] - hf_logits(reference, seq)[-1]).max() <= 1e-4


def test_mixed_types_in_a_fused_weight_are_each_kept(gguf_file, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        compile_model(
            CompileRequest(model=str(gguf_file), output=tmp_path / "b", **reference_pages())
        )
    assert not any("mix GGUF types" in r.message for r in caplog.records)
    assert not any("dequantized" in r.message for r in caplog.records)


def test_q4f32_keeps_q4_0_blocks_bit_for_bit(tiny_model, tmp_path, caplog):
    """q4f32 stores what Q4_0 stores (4-bit codes, one f16 scale per 32), so importing a
    Q4_0 file into it re-quantizes nothing: its weights are exactly `gguf`'s."""
    q4_0 = {suffix: GT.Q4_0 for suffix in DEFAULT_TYPES}
    path = write_tiny_gguf(tiny_model(SPEC), tmp_path / "q4_0.gguf", q4_0)
    arrays = {}
    for quantization in ("q4f32", "gguf"):
        out = tmp_path / quantization
        with caplog.at_level(logging.WARNING):
            compile_model(
                CompileRequest(
                    model=str(path), output=out, quantization=quantization, **reference_pages()
                )
            )
        arrays[quantization] = dict(load_arrays(Artifact(out).params_dir))
    assert not [r.message for r in caplog.records if "quantized" in r.message]
    assert arrays["q4f32"].keys() == arrays["gguf"].keys()
    for name, array in arrays["gguf"].items():
        np.testing.assert_array_equal(arrays["q4f32"][name], array, err_msg=name)
