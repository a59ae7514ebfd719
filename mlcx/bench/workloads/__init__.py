"""What a benchmark runs: the model (an artifact, or a model compiled into the JIT cache;
random-weight models of real shapes written as GGUF both engines load) and the work (prompts,
decode lengths, the echo workload of speculative decoding)."""
