"""Qwen3-MoE: Qwen3's attention (per-head q/k norms) with a mixture of experts in every layer,
no shared expert; HF folders and GGUF (`qwen3moe`)."""
