"""gpt-oss: attention sinks, alternating windowed and full layers, biases everywhere, and a
mixture of experts with MXFP4 weights; HF folders (dense or MXFP4) and GGUF (`gpt-oss`)."""
