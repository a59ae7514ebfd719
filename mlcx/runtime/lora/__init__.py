"""LoRA adapters at run time: which adapters an engine loaded (by name, into the compiled
model's adapter slots), their stacked weights as the step functions take them, and the
adapter each request runs with. No tensors on a device here: the runner owns those."""
