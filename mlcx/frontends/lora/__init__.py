"""LoRA adapters over the shared decoder: reading them (a PEFT folder, a llama.cpp GGUF
adapter) into low-rank pairs per layer and weight slot, laying them out as the compiled
model's adapter inputs (one stacked A and B per fused projection: mlcx's qkv and gate_up take
the concatenation of their parts' deltas), and merging one into the weights at compile time.
`read.read_adapter` is the entry point; mlcx.kernels.lora_layout declares the inputs."""
