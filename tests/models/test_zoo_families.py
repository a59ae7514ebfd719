"""2026's dense families, each a declaration over the shared decoder, held to HF transformers:
Gemma 2 (attention and final soft-capping, every other layer windowed), OLMo 2 and OLMo 3
(norms after each block, q/k norms over all heads; OLMo 3's windows), Granite (multipliers,
logits scaling), SmolLM3 (no RoPE in every 4th layer), Ministral 3 (YaRN, query scaling by
position past the original context).

Each tiny random model is compiled from its Hugging Face folder and from the GGUF that llama.cpp's
own convert_hf_to_gguf.py writes of it; both must match transformers to 1e-4 over a prompt longer
than any window (and past Ministral 3's original context), with 32 greedy tokens equal.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest
from mlcx.frontends.source import load_source
from tests.support.compile_cache import compile_model
from tests.support.gguf_vs_hf import assert_matches_transformers
from tests.support.llamacpp_convert import convert
from tests.support.zoo_models import CASES, PROMPT, sharpened


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tiny_model, tmp_path_factory):
    spec, gguf_arch = CASES[request.param]
    root = tmp_path_factory.mktemp(request.param)
    folder = sharpened(tiny_model(spec), root / "hf", spec.seed)
    gguf = convert(folder, root / "tiny.gguf")
    artifacts = {
        source: compile_model(
            CompileRequest(
                str(model), output=root / f"art-{source}", quantization=quant, kv_dtype="float32"
            )
        )
        for source, model, quant in (("hf", folder, "q0f32"), ("gguf", gguf, None))
    }
    return request.param, gguf_arch, folder, gguf, artifacts


def test_the_gguf_reads_as_the_same_model(case):
    family, gguf_arch, folder, gguf, _ = case
    hf, file = load_source(str(folder)), load_source(str(gguf))
    assert file.tensors.architecture == gguf_arch
    expected = "olmo2" if family == "olmo3" else family
    assert hf.arch.name == file.arch.name == expected
    ours, theirs = file.config.to_dict(), hf.config.to_dict()
    # GGUF stores its floats as float32
    for name in [k for k, v in theirs.items() if isinstance(v, float)]:
        assert np.float32(ours.pop(name)) == np.float32(theirs.pop(name)), name
    assert ours == theirs


@pytest.mark.parametrize("source", ["hf", "gguf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    _, _, folder, _, artifacts = case
    assert_matches_transformers(folder, artifacts[source], prompt_tokens=PROMPT)
