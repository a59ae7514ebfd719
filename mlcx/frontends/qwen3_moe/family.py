"""Qwen3-MoE: Qwen3's attention with a mixture of experts in every layer, no shared expert."""

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.experts import gguf_experts, hf_experts, no_shared_experts
from mlcx.frontends.rules.hf import refuse


def _sparse_everywhere(r) -> None:
    """The shared decoder puts the experts in every layer, as the released models have."""
    if r.config.get("mlp_only_layers") or r.config.get("decoder_sparse_step", 1) != 1:
        raise UnsupportedModelError(
            "qwen3_moe: dense layers among the experts (mlp_only_layers, decoder_sparse_step "
            "!= 1) are not supported"
        )


FAMILY = Family(
    "qwen3_moe",
    ("Qwen3MoeForCausalLM", "qwen3_moe"),
    "Qwen3-MoE (Qwen3's attention, experts in every layer, top-k renormalized per "
    "`norm_topk_prob`; no shared expert)",
    options={"qk_norm": True},
    hf=HFSide(
        rules=(hf_experts("moe_intermediate_size"),),
        checks=(
            refuse("use_sliding_window", "set it to false in config.json"),
            refuse("attention_bias", "the released Qwen3 models have none"),
            _sparse_everywhere,
            no_shared_experts,
        ),
    ),
    # llama.cpp's qwen3moe graph always renormalizes the top-k weights
    gguf=GGUFSide(
        "qwen3moe",
        (gguf_experts("expert_feed_forward_length", renormalize=True),),
        default_rms_eps=1e-6,
        experts=True,
    ),
)
