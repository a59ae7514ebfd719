"""OLMoE: attention with RMSNorm over the whole q and k projections, then a mixture of experts
(top-k weights not renormalized by default); HF folders and GGUF (`olmoe`)."""
