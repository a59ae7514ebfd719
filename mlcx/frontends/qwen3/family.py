"""Qwen3: Llama's decoder with an RMSNorm over each q and k head and an explicit head_dim."""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.hf import refuse

FAMILY = Family(
    "qwen3",
    ("Qwen3ForCausalLM", "qwen3"),
    "Qwen3 (per-head q/k RMSNorm, explicit head_dim; YaRN RoPE scaling)",
    options={"qk_norm": True},
    hf=HFSide(
        checks=(
            refuse("use_sliding_window", "set it to false in config.json"),
            refuse("attention_bias", "the released Qwen3 models have none"),
        )
    ),
    gguf=GGUFSide("qwen3", default_rms_eps=1e-6),
)
