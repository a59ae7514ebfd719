"""Qwen3 embedding models (Qwen3-Embedding): Qwen3's decoder run causally over the whole text
without a KV cache, pooled at the last token, L2-normalized; Matryoshka-trained."""
