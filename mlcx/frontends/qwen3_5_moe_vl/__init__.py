"""Qwen3.5-MoE's text model read from its multimodal checkpoints, as released."""
