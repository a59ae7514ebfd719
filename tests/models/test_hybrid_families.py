"""Hybrid families held to HF transformers: Qwen3.5 (Gated DeltaNet layers beside gated
attention), Qwen3.5-MoE (the same with routed and shared experts) and LFM2 (short convolutions
beside attention), each a tiny random model (tests/support/hybrid_models.py) compiled for cpu
from its Hugging Face folder and from the GGUF llama.cpp's own converter writes of it.

The prompt (150 tokens) goes through the runtime's steps of the artifact's prefill chunk (64):
three prefill steps, each continuing from the state its sequence's slot holds, more than two of
the delta rule's 64-token chunks. Every prompt row's logits within 1e-4 of transformers, then 32
greedy tokens equal, each step's logits within 1e-4 too.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.frontends.source import load_source
from tests.support.harness import Harness, hf_logits
from tests.support.hybrid_models import (
    CHUNK,
    GGUF_ARCH,
    PROMPT,
    SPECS,
    compiled_hybrid,
    hybrid_folder,
    hybrid_gguf,
)
from tests.support.tiny_models import load_reference

TOL = 1e-4
GREEDY = 32


@pytest.fixture(scope="module", params=list(SPECS))
def family(request, tmp_path_factory):
    return request.param, hybrid_folder(tmp_path_factory, request.param)


def test_the_gguf_reads_as_the_same_model(family, tmp_path_factory):
    name, folder = family
    gguf = hybrid_gguf(tmp_path_factory, name)
    hf, file = load_source(str(folder)), load_source(str(gguf))
    assert file.tensors.architecture == GGUF_ARCH[name]
    assert hf.arch.name == file.arch.name == name
    ours, theirs = file.config.to_dict(), hf.config.to_dict()
    # llama.cpp's converter tiles the v heads over the k heads (Qwen3.5's 4 over 2)
    assert (ours.pop("delta_head_order"), theirs.pop("delta_head_order")) == (
        ("tiled", "grouped") if name.startswith("qwen") else ("grouped", "grouped")
    )
    for key in [k for k, v in theirs.items() if isinstance(v, float)]:  # stored as float32
        assert np.float32(ours.pop(key)) == np.float32(theirs.pop(key)), key
    assert ours == theirs
    assert sum(kind != "attention" for kind in theirs["layer_kinds"]) == 3


def test_the_artifact_records_each_state_layers_tensors(family, tmp_path_factory):
    name, _ = family
    config = Artifact(compiled_hybrid(tmp_path_factory, name)).config
    model = config.model
    assert config.kv_layers == 1
    layers = [t.layer for t in config.state_tensors]
    assert set(layers) == set(model.state_layers) and layers == sorted(layers)
    conv = [t for t in config.state_tensors if t.name == "conv"][0]
    if name == "lfm2":
        assert conv.shape == (model.hidden_size, model.conv_kernel - 1)
        assert config.state_slot_bytes == 3 * model.hidden_size * 2 * 4
    else:
        width = 2 * model.delta_k_heads * model.delta_k_dim + 64  # q, k; v: 4 heads of 16
        recurrent = (model.delta_v_heads, model.delta_k_dim, model.delta_v_dim)
        assert conv.shape == (width, model.delta_conv_kernel - 1)
        assert [t.shape for t in config.state_tensors if t.name == "recurrent"] == [recurrent] * 3


@pytest.fixture(scope="module")
def greedy(family) -> tuple[list[int], np.ndarray]:
    """transformers' greedy run (the prompt, then GREEDY tokens decoded with its own cache) and
    the logits of every row from one forward over the whole sequence, once per family."""
    import torch

    _, folder = family
    reference = load_reference(folder)
    rng = np.random.default_rng(7)
    seq = rng.integers(0, reference.config.vocab_size, PROMPT).tolist()
    with torch.no_grad():
        out = reference(torch.tensor([seq]), use_cache=True)
        for _ in range(GREEDY):
            seq.append(int(out.logits[0, -1].argmax()))
            out = reference(torch.tensor([seq[-1:]]), cache=out.cache)
    logits = hf_logits(reference, seq)
    # the cached decode chose what the whole-sequence forward chooses
    assert logits[PROMPT - 1 : -1].argmax(-1).tolist() == seq[PROMPT:]
    return seq, logits


@pytest.mark.parametrize("source", ["hf", "gguf"])
def test_logits_and_greedy_tokens_match_transformers(family, greedy, source, tmp_path_factory):
    name, _ = family
    seq, want = greedy
    harness = Harness(compiled_hybrid(tmp_path_factory, name, source), num_blocks=32)
    steps = [
        harness.step({0: seq[i : min(i + CHUNK, PROMPT)]}, all_rows=True)[0]
        for i in range(0, PROMPT, CHUNK)
    ]
    got = np.concatenate(steps)
    assert np.abs(got - want[:PROMPT]).max() <= TOL
    row = got[-1]
    for pos in range(PROMPT, PROMPT + GREEDY):
        assert int(np.argmax(row)) == seq[pos]  # the greedy token transformers chose
        row = harness.decode({0: seq[pos]})[0]
        assert np.abs(row - want[pos]).max() <= TOL
