"""Qwen2/Qwen2.5: Llama's graph plus q/k/v biases; HF folders and llama.cpp GGUF (`qwen2`)."""
