"""Qwen3.5 as released: a multimodal checkpoint (Qwen3_5ForConditionalGeneration, the text model
under `text_config` and `model.language_model.`, a vision tower beside it, the MTP layer under
`mtp.`). mlcx compiles its text model alone: the same config as the text-only folder, and the
logits of transformers' multimodal model on text."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from safetensors import safe_open

from mlcx.frontends.source import load_source
from tests.support.harness import Harness, hf_logits
from tests.support.hybrid_models import CHUNK, compiled_hybrid, hybrid_folder
from tests.support.tiny_models import load_reference

TOL = 1e-4
VISION = {
    "depth": 1,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "out_hidden_size": 64,
    "num_position_embeddings": 16,
}


def _multimodal(text, out, config_class, model_class):
    """A multimodal checkpoint (random vision tower) of the text folder `text`'s weights."""
    import torch
    from safetensors.torch import load_file, save_file

    config = config_class(text_config=load_reference(text).config.to_dict(), vision_config=VISION)
    torch.manual_seed(0)
    model_class(config).save_pretrained(out)
    tensors = load_file(out / "model.safetensors")
    for name, value in load_file(text / "model.safetensors").items():
        mapped = name.replace("model.", "model.language_model.", 1)
        assert mapped in tensors or name.startswith(("mtp.", "lm_head")), name
        tensors[mapped if name.startswith("model.") else name] = value
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(text / name, out / name)
    return out


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The tiny Qwen3.5's text weights inside a multimodal checkpoint."""
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    text = hybrid_folder(tmp_path_factory, "qwen3_5")
    out = tmp_path_factory.mktemp("qwen3_5-released")
    return text, _multimodal(text, out, Qwen3_5Config, Qwen3_5ForConditionalGeneration)


def _read_alike(text, folder, family: str) -> None:
    ours, theirs = load_source(str(folder)), load_source(str(text))
    assert (ours.arch.name, theirs.arch.name) == (family + "_vl", family)
    assert ours.config == theirs.config
    renamed = [
        tuple(n.replace("model.", "model.language_model.", 1) for n in spec.sources)
        for spec in theirs.weights
    ]
    assert [spec.sources for spec in ours.weights] == renamed
    stored = set(safe_open(folder / "model.safetensors", "np").keys())
    assert {n for spec in ours.weights for n in spec.sources} <= stored
    # the same arrays: what compile makes of the folder is the text-only folder's artifact
    for spec, names in zip(theirs.weights, renamed, strict=True):
        for theirs_name, ours_name in zip(spec.sources, names, strict=True):
            want = theirs.tensors.get(theirs_name).load()
            assert np.array_equal(ours.tensors.get(ours_name).load(), want), ours_name


def test_the_text_model_reads_as_the_text_only_folder(released):
    _read_alike(*released, "qwen3_5")


def test_the_moe_text_model_reads_as_the_text_only_folder(tmp_path_factory):
    from transformers import Qwen3_5MoeConfig, Qwen3_5MoeForConditionalGeneration

    text = hybrid_folder(tmp_path_factory, "qwen3_5_moe")
    out = tmp_path_factory.mktemp("qwen3_5_moe-released")
    folder = _multimodal(text, out, Qwen3_5MoeConfig, Qwen3_5MoeForConditionalGeneration)
    _read_alike(text, folder, "qwen3_5_moe")


def test_logits_match_the_multimodal_model_on_text(released, tmp_path_factory):
    """The artifact of the text-only folder (which the multimodal folder reads as, arrays and
    all: above) computes transformers' multimodal model on text."""
    from transformers import Qwen3_5ForConditionalGeneration

    _, folder = released
    artifact = compiled_hybrid(tmp_path_factory, "qwen3_5")
    reference = Qwen3_5ForConditionalGeneration.from_pretrained(folder).float().eval()
    harness = Harness(artifact, num_blocks=32)
    prompt = np.random.default_rng(9).integers(0, 380, 2 * CHUNK - 7).tolist()
    got = np.concatenate(
        [harness.step({0: prompt[i : i + CHUNK]}, True)[0] for i in range(0, len(prompt), CHUNK)]
    )
    assert np.abs(got - hf_logits(reference, prompt)).max() <= TOL
    seq = prompt + [int(np.argmax(got[-1]))]
    for _ in range(4):
        row = harness.decode({0: seq[-1]})[0]
        assert np.abs(row - hf_logits(reference, seq)[-1]).max() <= TOL
        seq.append(int(np.argmax(row)))
