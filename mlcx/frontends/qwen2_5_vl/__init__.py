"""Qwen2.5-VL: Qwen2 text with M-RoPE, taking the Qwen vision tower's rows (qwen_vision)."""
