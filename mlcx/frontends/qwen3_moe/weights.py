"""Where Qwen3-MoE's weights live: `mlp.gate` and `mlp.experts.E.{gate,up,down}_proj` in a
Hugging Face checkpoint; `ffn_gate_inp` and `ffn_*_exps` in a llama.cpp GGUF file."""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.moe.weights import HFExpertNames, gguf_moe_weights, hf_moe_weights
from mlcx.frontends.weight_spec import WeightSpec


def hf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return hf_moe_weights(cfg, HFExpertNames())


def gguf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return gguf_moe_weights(cfg, rope_permuted=False)  # NeoX RoPE, as qwen3
