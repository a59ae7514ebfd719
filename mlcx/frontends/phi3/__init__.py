"""Phi-3 / Phi-3.5: fused qkv and gate_up projections, LongRoPE; HF folders and GGUF (`phi3`)."""
