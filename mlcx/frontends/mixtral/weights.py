"""Where Mixtral's weights live: `block_sparse_moe.gate` and `block_sparse_moe.experts.E.w1/w3/w2`
(gate/up/down) in a Hugging Face checkpoint; llama.cpp's `llama` names plus `ffn_gate_inp` and
`ffn_*_exps` in a GGUF file, q/k rows reordered for its interleaved RoPE as for Llama."""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.moe.weights import HFExpertNames, gguf_moe_weights, hf_moe_weights
from mlcx.frontends.weight_spec import WeightSpec

_HF = HFExpertNames(block="block_sparse_moe", router="gate", gate="w1", up="w3", down="w2")


def hf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return hf_moe_weights(cfg, _HF)


def gguf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return gguf_moe_weights(cfg, rope_permuted=True)
