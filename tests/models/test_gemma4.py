"""Gemma 4 text, a declaration over the shared decoder, held to HF transformers.

Two tiny random Gemma4ForCausalLM (tests/support/tiny_gemma4.py): one with every switch on
(per-layer inputs, KV-shared layers, wider global heads with fewer kv heads and proportional
RoPE, keys as values, doubled shared MLPs, experts beside the MLP), one dense with them off.
Each is compiled from its Hugging Face folder, and the first also from the GGUF llama.cpp's own
convert_hf_to_gguf.py writes of it (not into the folder: the artifact and the GGUF sit beside
it, since the converter reads every file in the folder); each artifact must match transformers
to 1e-4 over a prompt longer than the 16-token window, with 32 greedy tokens equal. Each GGUF
reads as the same config and the same weight arrays as its folder, bit for bit, so the dense
GGUF's artifact would be the folder's (for the suite's time it is not compiled).
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.compile.model import CompileRequest
from mlcx.frontends.source import load_source
from tests.support.compile_cache import compile_model
from tests.support.gguf_vs_hf import assert_matches_transformers, converted_weights
from tests.support.harness import Harness
from tests.support.llamacpp_convert import convert
from tests.support.tiny_gemma4 import SPECS
from tests.support.tiny_models import load_reference

PROMPT = 40  # past the 16-token window
COMPILED = {"everything": ("hf", "gguf"), "dense": ("hf",)}  # the sources compiled


@pytest.fixture(scope="module", params=list(SPECS))
def case(request, gemma4_model, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"gemma4-{request.param}")
    folder = gemma4_model(request.param)
    gguf = convert(folder, root / "tiny.gguf")
    artifacts = {
        source: compile_model(
            CompileRequest(
                str(model), output=root / f"art-{source}", quantization=quant, kv_dtype="float32"
            )
        )
        for source, model, quant in (("hf", folder, "q0f32"), ("gguf", gguf, None))
        if source in COMPILED[request.param]
    }
    return request.param, folder, gguf, artifacts


def test_the_gguf_reads_as_the_same_model(case):
    _, folder, gguf, _ = case
    hf, file = load_source(str(folder)), load_source(str(gguf))
    assert file.tensors.architecture == "gemma4"
    assert hf.arch.name == file.arch.name == "gemma4"
    ours, theirs = file.config.to_dict(), hf.config.to_dict()
    # GGUF stores the epsilon as float32
    assert np.float32(ours.pop("rms_norm_eps")) == np.float32(theirs.pop("rms_norm_eps"))
    assert ours == theirs
    (_, weights), (_, want) = converted_weights(gguf), converted_weights(folder)
    assert weights.keys() == want.keys()
    for name, array in weights.items():
        np.testing.assert_array_equal(array, want[name], err_msg=name)


def test_logits_and_greedy_tokens_match_transformers(case):
    _, folder, _, artifacts = case
    for artifact in artifacts.values():
        assert_matches_transformers(folder, artifact, prompt_tokens=PROMPT)


def test_shared_layers_own_no_pages(case):
    """One page tensor per layer that keeps its own KV cache in transformers (kv_sharing_modes
    not "reuse"), each of that layer's head geometry; the runner allocates exactly those."""
    _, folder, _, artifacts = case
    text = load_reference(folder).config
    owners = [i for i, mode in enumerate(text.kv_sharing_modes) if mode != "reuse"]
    config = Artifact(artifacts["hf"]).config
    want = [
        (text.per_layer_config[i].num_key_value_heads, text.per_layer_config[i].head_dim)
        for i in owners
    ]
    assert [(lay.num_kv_heads, lay.head_dim) for lay in config.kv_layouts] == want
    pages = Harness(artifacts["hf"], num_blocks=8).runner.kv_pages
    assert [tuple(p.shape) for p in pages] == [lay.pages_shape(8) for lay in config.kv_layouts]
    assert config.kv_block_bytes == sum(lay.pages_bytes(1) for lay in config.kv_layouts)


def test_copy_pages_copies_every_kv_layers_page(case):
    """Copy-on-write copies a page in each page tensor, whatever its head geometry."""
    _, _, _, artifacts = case
    harness = Harness(artifacts["hf"], num_blocks=8)
    harness.step({0: list(range(3, 40))})  # fills pages 0..2 of every KV layer
    runner = harness.runner
    before = [p.numpy() for p in runner.kv_pages]
    runner.copy_pages([(1, 5), (0, 6)])
    for old, new in zip(before, (p.numpy() for p in runner.kv_pages), strict=True):
        np.testing.assert_array_equal(new[5], old[1])
        np.testing.assert_array_equal(new[6], old[0])
        np.testing.assert_array_equal(np.delete(new, [5, 6], 0), np.delete(old, [5, 6], 0))
