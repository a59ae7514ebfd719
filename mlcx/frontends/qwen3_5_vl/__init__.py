"""Qwen3.5's text model read from its multimodal checkpoints, as released."""
