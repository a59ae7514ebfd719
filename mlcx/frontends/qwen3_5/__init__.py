"""Qwen3.5 (dense): Gated DeltaNet layers beside gated attention; HF folders and GGUF (`qwen35`)."""
