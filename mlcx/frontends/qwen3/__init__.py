"""Qwen3: Llama's graph plus an RMSNorm over each q and k head; HF folders and GGUF (`qwen3`)."""
