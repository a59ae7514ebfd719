"""Qwen2 / Qwen2.5: Llama's decoder with q/k/v biases."""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.hf import refuse

FAMILY = Family(
    "qwen2",
    ("Qwen2ForCausalLM", "qwen2"),
    "Qwen2 / Qwen2.5 (q/k/v biases; YaRN RoPE scaling)",
    options={"qkv_bias": True},
    hf=HFSide(checks=(refuse("use_sliding_window", "set it to false in config.json"),)),
    gguf=GGUFSide("qwen2", default_rms_eps=1e-6),
)
