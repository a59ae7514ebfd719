"""K-quant GGUFs through the WebGPU plan on this machine's wgpu adapter (lavapipe): the tiny
Q4_K / Q5_K / Q6_K / Q4_K_M-style files of tests/models/test_gguf_kquants.py, compiled for
webgpu with their blocks kept and f32 math (`-q gguf`; the default for GPUs is
f16 activations) (mlcx's GPU linear kernels read them), give transformers'
logits (transformers dequantizes the same file with `gguf`) within 1e-4."""

from __future__ import annotations

import numpy as np
import pytest

from mlcx.artifact.config import Artifact
from mlcx.compile.model import CompileRequest
from mlcx.quantization.formats import format_from_name
from mlcx.quantization.stacked import StackedFormat
from tests.support.compile_cache import compile_model
from tests.support.harness import assert_prompt_and_greedy_steps_match
from tests.support.kquant_files import KQUANT_SPEC, TIED_SPEC, write_mix

TOL = 1e-4


@pytest.mark.parametrize("mix", ["q4_k_m", "q4_k_m_tied", "q5_k", "q6_k"])
def test_webgpu_logits_match_transformers(adapter, tiny_model, tmp_path, mix):
    import torch
    from transformers import AutoModelForCausalLM

    spec = TIED_SPEC if mix.endswith("tied") else KQUANT_SPEC
    path = write_mix(tiny_model(spec), tmp_path / f"{mix}.gguf", mix)
    art = compile_model(CompileRequest(str(path), "webgpu", "gguf", output=tmp_path / "web"))
    formats = [format_from_name(f) for f in Artifact(art).config.weight_formats.values()]
    kinds = {getattr(f, "kind", None) for f in formats if not isinstance(f, StackedFormat)}
    assert kinds & {"q4_k", "q5_k", "q6_k"}
    reference = AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, dtype=torch.float32
    ).eval()
    prompt = np.random.default_rng(9).integers(0, reference.config.vocab_size, 19).tolist()
    assert_prompt_and_greedy_steps_match(art, reference, prompt, 2, TOL)
