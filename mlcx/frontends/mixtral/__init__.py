"""Mixtral: Mistral's attention with a mixture of experts whose top-k weights are renormalized;
HF folders and GGUF (llama.cpp writes it as `llama` with `ffn_*_exps` tensors)."""
