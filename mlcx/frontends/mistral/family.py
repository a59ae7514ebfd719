"""Mistral: Llama's decoder with a sliding window on every layer."""

from mlcx.frontends.family import Family, HFSide
from mlcx.frontends.rules.layers import hf_window

FAMILY = Family(
    "mistral",
    ("MistralForCausalLM", "mistral"),
    "Mistral (sliding-window attention on every layer)",
    hf=HFSide(rules=(hf_window(),)),
)
