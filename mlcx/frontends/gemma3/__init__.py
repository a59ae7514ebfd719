"""Gemma 3 text: sandwich norms, GeGLU, q/k norms, local and global layers; HF and GGUF."""
