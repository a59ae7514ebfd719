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

import shutil
from pathlib import Path

import numpy as np
import pytest

from mlcx.compile.model import CompileRequest, compile_model
from mlcx.frontends.source import load_source
from tests.support.gguf_vs_hf import assert_matches_transformers
from tests.support.llamacpp_convert import convert
from tests.support.tiny_models import TinySpec, load_reference

WINDOW = 16
PROMPT = 40  # past every window and past Ministral 3's original context (32)
GEMMA2 = {"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": WINDOW}
GEMMA2 |= {"final_logit_softcapping": 3.0, "attn_logit_softcapping": 2.0}
OLMO3_LAYERS = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]
MINISTRAL3_ROPE = {
    "rope_type": "yarn",
    "rope_theta": 1e6,
    "factor": 8.0,
    "original_max_position_embeddings": 32,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "llama_4_scaling_beta": 0.5,
}
GRANITE = {"embedding_multiplier": 2.5, "residual_multiplier": 0.4}
GRANITE |= {"attention_multiplier": 0.3, "logits_scaling": 4.0}
CASES = {
    # family: (spec, the GGUF's llama.cpp architecture)
    "gemma2": (TinySpec(arch="gemma2", seed=91, extra=GEMMA2), "gemma2"),
    "olmo2": (TinySpec(arch="olmo2", seed=92), "olmo2"),
    "olmo3": (
        TinySpec(
            arch="olmo3",
            layers=4,
            seed=93,
            extra={"sliding_window": WINDOW, "layer_types": OLMO3_LAYERS},
        ),
        "olmo2",
    ),
    "granite": (TinySpec(arch="granite", seed=94, extra=GRANITE), "granite"),
    "smollm3": (TinySpec(arch="smollm3", layers=4, seed=95, tie=True), "smollm3"),
    "ministral3": (
        TinySpec(
            arch="ministral3", seed=96, extra={"head_dim": 16, "rope_parameters": MINISTRAL3_ROPE}
        ),
        "mistral3",
    ),
}


def _sharpened(src: Path, dst: Path, seed: int) -> Path:
    """A copy with attention far from uniform, so q/k row-order and RoPE errors show: norm
    weights near one, q/k projections scaled up."""
    import torch

    if dst.exists():
        return dst
    shutil.copytree(src, dst)
    model = load_reference(src)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.copy_(1.0 + 0.1 * torch.randn(param.shape, generator=gen))
            elif name.endswith(("q_proj.weight", "k_proj.weight")):
                param.mul_(3.0)
    model.save_pretrained(dst)
    return dst


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tiny_model, tmp_path_factory):
    spec, gguf_arch = CASES[request.param]
    root = tmp_path_factory.mktemp(request.param)
    folder = _sharpened(tiny_model(spec), root / "hf", spec.seed)
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
    # GGUF stores the epsilon as float32
    assert np.float32(ours.pop("rms_norm_eps")) == np.float32(theirs.pop("rms_norm_eps"))
    assert ours == theirs


@pytest.mark.parametrize("source", ["hf", "gguf"])
def test_logits_and_greedy_tokens_match_transformers(case, source):
    _, _, folder, _, artifacts = case
    assert_matches_transformers(folder, artifacts[source], prompt_tokens=PROMPT)
