"""Llama: pre-norm decoder layers with RoPE attention (GQA) and a SwiGLU MLP."""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import DecoderLayer, Formats
from mlcx.frontends.nn.causal_lm import CausalLM
from mlcx.kernels.attention import PagedKVOps


def build(cfg: DecoderConfig, formats: Formats, kv: PagedKVOps) -> CausalLM:
    return CausalLM(cfg, formats, kv, layer=DecoderLayer)
