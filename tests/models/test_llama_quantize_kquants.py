"""K-quant files made by llama.cpp's own `llama-quantize` (where it is built; skipped
otherwise): a tiny random Llama written as F32, quantized to Q4_K_M, Q5_K_M, Q6_K, Q2_K (with
Q3_K), IQ4_XS and IQ4_NL by llama.cpp's mix rules and quantizers, compiled by mlcx with every
block kept, and held to transformers' GGUF loader (which dequantizes with `gguf`) within 1e-4.
(The default model requantized: tests/models/test_llama_quantize_default.py.)"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as GT
from gguf import GGUFReader

from mlcx.cache import cache_dir
from mlcx.compile.model import CompileRequest
from tests.support.compile_cache import compile_model
from tests.support.harness import Harness, hf_logits
from tests.support.kquant_files import KQUANT_SPEC
from tests.support.reference_pages import reference_pages
from tests.support.tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.slow
F32 = {"weight": GT.F32}


def _llama_quantize() -> Path | None:
    found = shutil.which("llama-quantize")
    if found:
        return Path(found)
    built = sorted(cache_dir().glob("peers/llama.cpp-cpu-*/bin/llama-quantize"))
    return built[-1] if built else None


@pytest.fixture(scope="module")
def f32_file(tiny_model, tmp_path_factory):
    if _llama_quantize() is None:
        pytest.skip("llama-quantize is not built (see docs/kquants.md)")
    return write_tiny_gguf(tiny_model(KQUANT_SPEC), tmp_path_factory.mktemp("lq") / "f32.gguf", F32)


# (no Q3_K_M: llama.cpp's Q2_K already writes Q3_K blocks here, beside its Q2_K ones)
@pytest.mark.parametrize("mix", ["Q4_K_M", "Q5_K_M", "Q6_K", "Q2_K", "IQ4_XS", "IQ4_NL"])
def test_llama_quantize_files_match_transformers(f32_file, tmp_path, mix, caplog):
    import torch
    from transformers import AutoModelForCausalLM

    path = tmp_path / f"{mix}.gguf"
    cmd = [str(_llama_quantize()), str(f32_file), str(path), mix]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    types = {GT(t.tensor_type).name for t in GGUFReader(str(path)).tensors if len(t.shape) > 1}
    assert types & {"Q4_K", "Q5_K", "Q6_K", "Q3_K", "Q2_K", "IQ4_XS", "IQ4_NL"}, types
    with caplog.at_level(logging.WARNING):
        art = compile_model(
            CompileRequest(str(path), "cpu", output=tmp_path / "cpu", **reference_pages())
        )
    assert not [r.message for r in caplog.records if "dequantized" in r.message]
    reference = AutoModelForCausalLM.from_pretrained(
        tmp_path, gguf_file=path.name, dtype=torch.float32
    ).eval()
    prompt = np.random.default_rng(2).integers(0, reference.config.vocab_size, 17).tolist()
    got = Harness(art, num_blocks=32).step({0: prompt}, all_rows=True)[0]
    assert np.abs(got - hf_logits(reference, prompt)).max() <= 1e-4
