"""Mistral: Llama's graph and Hugging Face weight names; only the config differs (config.py)."""
