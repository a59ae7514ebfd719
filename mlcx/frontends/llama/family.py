"""Llama 2/3, SmolLM, TinyLlama: the shared decoder as it is."""

from dataclasses import replace

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.gguf import biases_from_tensors
from mlcx.frontends.rules.hf import flag
from mlcx.frontends.weight_names import GGUF

FAMILY = Family(
    "llama",
    ("LlamaForCausalLM", "llama"),
    "Llama 2/3 (Llama 3.1's llama3 RoPE scaling), SmolLM, TinyLlama; `attention_bias`",
    # attention_bias adds a bias to q, k, v and o alike
    hf=HFSide(rules=(flag("attention_bias", "qkv_bias", "o_bias"),)),
    gguf=GGUFSide("llama", (biases_from_tensors,), replace(GGUF, rope_permuted=True)),
)
