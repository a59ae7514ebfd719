"""SmolVLM / Idefics3 from a text GGUF plus its mmproj GGUF (`--mmproj`), both written by
llama.cpp's own convert_hf_to_gguf.py from the tiny random Idefics3ForConditionalGeneration
(image splitting on): the mmproj reads as the folder's encoder (config, preprocessing,
weights), and the compiled pair's image rows, prompt layout, image-prompt logits and 32 greedy
tokens match transformers to 1e-4. An mmproj of a projector mlcx does not read, or one made for
another text model, is refused before anything compiles."""

from __future__ import annotations

import json

import gguf
import numpy as np
import pytest

from mlcx.compile.encoder import from_mmproj
from mlcx.compile.encoder_preprocess import preprocess_config
from mlcx.compile.model import CompileRequest, export_model
from mlcx.errors import UnsupportedModelError
from mlcx.frontends.encoders import ENCODERS
from mlcx.frontends.idefics3_vision.config import from_hf
from mlcx.frontends.source import load_source
from mlcx.runtime.api.llm import LLM
from mlcx.runtime.core.config import EngineConfig
from tests.support.compile_cache import compile_model
from tests.support.tiny_idefics3 import gguf_pair, make_tiny_idefics3
from tests.support.tiny_models import TinySpec
from tests.vision.test_idefics3 import (
    assert_image_rows_match_transformers,
    assert_layout_matches_idefics3_processor,
    assert_logits_and_greedy_tokens_match_transformers,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_idefics3(tmp_path_factory.mktemp("idefics3") / "hf")


@pytest.fixture(scope="module")
def pair(folder, tmp_path_factory):
    return gguf_pair(folder, tmp_path_factory.mktemp("idefics3-gguf"))


@pytest.fixture(scope="module")
def llm(pair, tmp_path_factory):
    text, mmproj = pair
    out = tmp_path_factory.mktemp("idefics3-mmproj-art") / "art"
    request = CompileRequest(model=str(text), output=out, kv_dtype="float32", mmproj=mmproj)
    return LLM(str(compile_model(request)), EngineConfig(kv_blocks=64))


@pytest.fixture(scope="module")
def reference(folder):
    from transformers import Idefics3ForConditionalGeneration

    return Idefics3ForConditionalGeneration.from_pretrained(folder, dtype="float32").eval()


def test_the_mmproj_reads_as_the_folders_encoder(folder, pair):
    text, mmproj = pair
    encoder = from_mmproj(load_source(str(text)), mmproj)
    assert encoder.family.name == "idefics3"
    want = from_hf(json.loads((folder / "config.json").read_text()))
    got = encoder.config.to_dict()
    assert np.float32(got.pop("layer_norm_eps")) == np.float32(want.layer_norm_eps)
    assert got == {k: v for k, v in want.to_dict().items() if k != "layer_norm_eps"}
    assert encoder.preprocess == preprocess_config(folder, want)
    family = ENCODERS["idefics3"]
    params = [name for name, _ in family.build(want, "float32").named_parameters()]
    hf = dict(family.arrays(params, load_source(str(folder)).tensors, "float32"))
    for name, array in encoder.arrays(params, "float32"):
        assert array.shape == hf[name].shape and np.array_equal(array, hf[name]), name


def test_image_rows_match_transformers(llm, folder, reference, photo):
    assert_image_rows_match_transformers(llm, folder, reference, photo)


def test_prompt_layout_matches_idefics3_processor(llm, folder, photo):
    # the text GGUF's tokenizer and chat template, the mmproj's tiles
    assert_layout_matches_idefics3_processor(llm, folder, photo)


def test_logits_and_greedy_tokens_match_transformers(llm, folder, reference, photo):
    assert_logits_and_greedy_tokens_match_transformers(llm, folder, reference, photo)


def test_an_mmproj_of_another_projector_is_refused(pair, tmp_path):
    other = tmp_path / "mmproj-lfm2.gguf"
    writer = gguf.GGUFWriter(str(other), "clip")
    writer.add_string("clip.projector_type", "lfm2")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(UnsupportedModelError, match="projector type 'lfm2' is not supported"):
        export_model(CompileRequest(model=str(pair[0]), mmproj=other))


@pytest.mark.parametrize(
    "spec,problem",
    [
        (TinySpec(arch="gemma3"), "type 'idefics3' goes with a llama text model, not gemma3"),
        (TinySpec(hidden=32), "projects images to 64 features, the text model's hidden size is 32"),
        (TinySpec(), r"tokenizer lacks Idefics3's image tokens \['<image>'"),
    ],
)
def test_an_mmproj_for_another_text_model_is_refused(pair, tiny_model, spec, problem):
    with pytest.raises(UnsupportedModelError, match=problem):
        export_model(CompileRequest(model=str(tiny_model(spec)), mmproj=pair[1]))
