"""Qwen3.5-MoE: Qwen3.5's layers with routed and shared experts; HF folders and GGUF
(`qwen35moe`)."""
