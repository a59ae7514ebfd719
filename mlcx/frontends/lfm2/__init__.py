"""LFM2: short convolutions beside attention; HF folders and GGUF (`lfm2`)."""
