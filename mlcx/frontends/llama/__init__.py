"""Llama family: Llama 2/3, SmolLM, TinyLlama; HF folders and llama.cpp GGUF files."""
