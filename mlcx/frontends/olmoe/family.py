"""OLMoE: RMSNorm over the whole q and k projections, then a top-k mixture of experts."""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.experts import gguf_experts, hf_experts, no_shared_experts
from mlcx.frontends.rules.hf import refuse

FAMILY = Family(
    "olmoe",
    ("OlmoeForCausalLM", "olmoe"),
    "OLMoE (q/k RMSNorm over all heads, experts, top-k renormalized per `norm_topk_prob`)",
    options={"qk_norm": True, "qk_norm_scope": "all"},
    hf=HFSide(
        rules=(hf_experts("intermediate_size"),),
        checks=(
            refuse("clip_qkv", "clipping q/k/v is not implemented"),
            refuse("attention_bias", "the released OLMoE models have none"),
            no_shared_experts,
        ),
    ),
    # llama.cpp's olmoe graph does not renormalize the top-k weights
    gguf=GGUFSide("olmoe", (gguf_experts("feed_forward_length", renormalize=False),), experts=True),
)
