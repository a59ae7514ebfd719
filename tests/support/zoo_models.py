"""The tiny 2026 dense families the zoo tests build (tests/models/test_zoo_families.py,
tests/webgpu/test_zoo_wgpu.py): each spec exercises what its family adds to the shared decoder."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.tiny_models import TinySpec, edited_copy

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
    "gemma2": (TinySpec(arch="gemma2", seed=91, tie=True, extra=GEMMA2), "gemma2"),  # as released
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
    "smollm3": (
        TinySpec(arch="smollm3", layers=4, seed=95, tie=True, extra={"pad_token_id": 1}),
        "smollm3",
    ),
    "ministral3": (
        TinySpec(
            arch="ministral3", seed=96, extra={"head_dim": 16, "rope_parameters": MINISTRAL3_ROPE}
        ),
        "mistral3",
    ),
}


def sharpened(src: Path, dst: Path, seed: int) -> Path:
    """A copy with attention far from uniform, so q/k row-order and RoPE errors show: norm
    weights near one, q/k projections scaled up."""
    import torch

    if dst.exists():
        return dst

    def edit(model, gen) -> None:
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.copy_(1.0 + 0.1 * torch.randn(param.shape, generator=gen))
            elif name.endswith(("q_proj.weight", "k_proj.weight")):
                param.mul_(3.0)

    edited_copy(src, dst, seed, edit)
    # the byte-level BPE as itself: a family's own tokenizer class (Gemma's) would add tokens
    config = json.loads((dst / "tokenizer_config.json").read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    (dst / "tokenizer_config.json").write_text(json.dumps(config))
    return dst
