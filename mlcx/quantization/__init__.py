"""Weight formats (how a tensor is stored: dense, group-quantized, GGUF blocks) and the
quantization schemes that assign them; the ground floor that kernels, frontends, compile and
the CLI share."""
