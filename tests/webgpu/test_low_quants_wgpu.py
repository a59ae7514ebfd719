"""GGUFs mixed as llama.cpp's Q2_K and IQ4_XS files are (tests/models/
test_gguf_low_quants.py) through the WebGPU plan on this machine's wgpu adapter (lavapipe),
blocks kept, f32 math (`-q gguf`): transformers' logits (it dequantizes the same file with
`gguf`) within 1e-4."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.compile.model import CompileRequest
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.stacked import StackedFormat
from tests.support.compile_cache import compile_model
from tests.support.harness import assert_prompt_and_greedy_steps_match
from tests.support.kquant_files import KQUANT_SPEC, LOW_MIXES, write_mix

TOL = 1e-4


def _kinds(art) -> set[str]:
    kinds = set()
    for name in Artifact(art).config.weight_formats.values():
        fmt = format_from_name(name)
        parts = fmt.parts if isinstance(fmt, StackedFormat) else ((0, fmt),)
        kinds |= {getattr(f, "kind", None) for _, f in parts}
    return kinds


@pytest.mark.parametrize("mix", list(LOW_MIXES))
def test_webgpu_logits_match_transformers(adapter, tiny_model, tmp_path, mix):
    import torch
    from transformers import AutoModelForCausalLM

    path = write_mix(tiny_model(KQUANT_SPEC), tmp_path / f"{mix}.gguf", mix)
    art = compile_model(CompileRequest(str(path), "webgpu", "gguf", output=tmp_path / "web"))
    assert _kinds(art) & {"q2_k", "q3_k", "iq4_nl", "iq4_xs"}
    reference = AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, dtype=torch.float32
    ).eval()
    prompt = np.random.default_rng(9).integers(0, reference.config.vocab_size, 19).tolist()
    assert_prompt_and_greedy_steps_match(art, reference, prompt, 2, TOL)
