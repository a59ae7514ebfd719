"""Qwen2.5-VL and Qwen3-VL from a `qwen2vl` / `qwen3vl` text GGUF plus its mmproj GGUF
(`--mmproj`), both written by llama.cpp's own convert_hf_to_gguf.py from tiny random folders
of a shape llama.cpp can express (Qwen2.5-VL: 3 layers, 112-pixel windows, layer 1 full;
Qwen3-VL: deepstack after layer 0, a 4x4 position grid): the mmproj reads as the folder's
encoder (config and weights; split q/k/v and patch frames joined back), and the compiled
pair's image rows, image-prompt logits (M-RoPE positions) and 32 greedy tokens match
transformers to 1e-4 on two image sizes (Qwen2.5-VL: one window, and windows cut by the
image's edge), with the processor held to mtmd's token bounds."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mlcx.compile.encoder import from_mmproj
from mlcx.compile.model import CompileRequest, export_model
from mlcx.errors import UnsupportedModelError
from mlcx.frontends.encoders import ENCODERS
from mlcx.frontends.source import load_source
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.sample.params import SamplingParams
from tests.support.compile_cache import compile_model
from tests.support.tiny_qwen_vl import (
    LLAMACPP_VISION,
    gguf_pair,
    hf_image_inputs,
    load_reference,
    make_tiny_qwen_vl,
    with_llamacpp_bounds,
)
from tests.vision.conftest import random_image
from tests.vision.test_qwen_vl import _hf, _hf_rows, _messages, _prompt_logits

TOL = 1e-4
PROJECTORS = {"qwen2_5_vl": "qwen2.5vl_merger", "qwen3_vl": "qwen3vl_merger"}
SEED = 53  # a random model whose greedy runs do not repeat one token
SIZES = {"one window": (100, 90), "cut windows": (250, 180)}


@pytest.fixture(scope="module", params=list(PROJECTORS))
def kind(request):
    return request.param


@pytest.fixture(scope="module")
def folder(kind, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"{kind}-gguf")
    made = make_tiny_qwen_vl(root / "made", kind, seed=SEED, vision=LLAMACPP_VISION[kind])
    return with_llamacpp_bounds(made, root / "hf")


@pytest.fixture(scope="module")
def pair(folder, kind, tmp_path_factory):
    return gguf_pair(folder, tmp_path_factory.mktemp(f"{kind}-pair"))


@pytest.fixture(scope="module")
def llm(pair, kind, tmp_path_factory):
    text, mmproj = pair
    out = tmp_path_factory.mktemp(f"{kind}-mmproj-art") / "art"
    request = CompileRequest(model=str(text), output=out, kv_dtype="float32", mmproj=mmproj)
    return LLM(str(compile_model(request)), EngineConfig(kv_blocks=64))


@pytest.fixture(scope="module")
def reference(folder, kind):
    return load_reference(folder, kind)


def test_the_mmproj_reads_as_the_folders_encoder(folder, kind, pair):
    text, mmproj = pair
    encoder = from_mmproj(load_source(str(text)), mmproj)
    family = ENCODERS[kind]
    want = family.config_from_hf(json.loads((folder / "config.json").read_text()))
    assert encoder.family.name == kind and encoder.config == want
    params = [name for name, _ in family.build(want, "float32").named_parameters()]
    hf = dict(family.arrays(params, load_source(str(folder)).tensors, "float32"))
    for name, array in encoder.arrays(params, "float32"):
        assert array.shape == hf[name].shape and np.array_equal(array, hf[name]), name


@pytest.mark.parametrize("size", SIZES)
def test_image_rows_match_transformers(llm, folder, reference, size):
    image = random_image(3, SIZES[size])
    rows = llm.engine.images.encoder.encode(image).rows
    want = _hf_rows(reference, hf_image_inputs(folder, image))
    assert rows.shape == want.shape
    assert np.abs(rows - want).max() <= TOL


@pytest.mark.parametrize("size", SIZES)
def test_logits_and_greedy_tokens_match_transformers(llm, folder, reference, size):
    logits_and_greedy_match(llm, folder, reference, random_image(7, SIZES[size]))


def logits_and_greedy_match(llm, folder, reference, image) -> None:
    """The image prompt's logits within TOL of transformers' and 32 greedy tokens equal (not
    one token repeated)."""
    ids, images = llm.chat_inputs(_messages(image))
    inputs = _hf(llm, folder, ids, [image])
    with torch.no_grad():
        want = reference(**inputs).logits[0].numpy()
        out = reference.generate(
            **inputs, max_new_tokens=32, do_sample=False, eos_token_id=None, pad_token_id=0
        )
    assert np.abs(_prompt_logits(llm, ids, images) - want).max() <= TOL
    params = SamplingParams.greedy(max_tokens=32, ignore_eos=True)
    [completion] = llm.generate([ids], params, images=[images])[0].outputs
    assert completion.token_ids == out[0, len(ids) :].tolist()
    assert len(set(completion.token_ids)) > 1


def test_the_text_gguf_without_its_mmproj_is_refused(pair):
    with pytest.raises(UnsupportedModelError, match="give llama.cpp's mmproj file"):
        export_model(CompileRequest(model=str(pair[0])))


def test_an_mmproj_for_another_text_model_is_refused(pair, kind, tiny_model):
    problem = f"type '{PROJECTORS[kind]}' goes with a {kind} text model, not llama"
    with pytest.raises(UnsupportedModelError, match=problem):
        export_model(CompileRequest(model=str(tiny_model()), mmproj=pair[1]))
