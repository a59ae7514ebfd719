"""Gemma 4 text: per-layer inputs, KV-shared layers, wider global heads, keys as values, experts
beside the MLP; HF and GGUF."""
