"""Qwen3-VL: Qwen3 text with interleaved M-RoPE and deepstack, taking the Qwen vision tower's
rows (qwen_vision)."""
