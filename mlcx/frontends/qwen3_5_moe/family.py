"""Qwen3.5-MoE: Qwen3.5's hybrid layers with a mixture of experts in every layer (top-k
renormalized) beside a shared expert scaled by a sigmoid gate."""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.qwen3_5.family import CHECKS, GGUF_NAMES, HF_NAMES, OPTIONS
from mlcx.frontends.rules.experts import gguf_experts, hf_experts
from mlcx.frontends.rules.hybrid import gguf_delta_layers, hf_delta_layers

_SHARED = "model.layers.{i}.mlp.shared_expert"


def _hf_shared(r, cfg):
    return {"shared_expert_size": int(r.get("shared_expert_intermediate_size", default=0))}


def _gguf_shared(ckpt, cfg):
    return {"shared_expert_size": int(ckpt.arch_meta("expert_shared_feed_forward_length", 0))}


FAMILY = Family(
    "qwen3_5_moe",
    ("Qwen3_5MoeForCausalLM", "qwen3_5_moe_text"),
    "Qwen3.5-MoE (Qwen3.5's hybrid layers; routed experts renormalized, a gated shared expert)",
    options=OPTIONS,
    hf=HFSide(
        HF_NAMES.with_names(
            **{f"shared_{p}": f"{_SHARED}.{p}_proj.weight" for p in ("gate", "up", "down")},
            shared_router=_SHARED + "_gate.weight",
        ),
        (hf_delta_layers, hf_experts("moe_intermediate_size", renormalize=True), _hf_shared),
        CHECKS,
    ),
    # llama.cpp's qwen35moe graph always renormalizes the top-k weights
    gguf=GGUFSide(
        "qwen35moe",
        (
            gguf_delta_layers,
            gguf_experts("expert_feed_forward_length", renormalize=True),
            _gguf_shared,
        ),
        GGUF_NAMES,
        default_rms_eps=1e-6,
        experts=True,
    ),
)
