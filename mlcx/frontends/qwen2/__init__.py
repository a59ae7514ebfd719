"""Qwen2: Llama's graph and weight names plus q/k/v biases; only the config differs."""
