"""Mixtral: Llama-style pre-norm attention, then a top-k mixture of SwiGLU experts."""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.causal_lm import CausalLM
from mlcx.frontends.nn.moe import moe_layer
from mlcx.kernels.attention import PagedKVOps


def build(cfg: DecoderConfig, formats: Formats, kv: PagedKVOps) -> CausalLM:
    return CausalLM(cfg, formats, kv, layer=moe_layer)
