"""The Llama text model of an Idefics3ForConditionalGeneration folder (`text_config`, tensors
under `model.text_model.`), built with prefill_image."""

from __future__ import annotations

from typing import Any

from mlcx.frontends import llama_family
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.llama import config as llama_config
from mlcx.frontends.nn.blocks import DecoderLayer, Formats
from mlcx.frontends.nn.causal_lm import CausalLM
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.kernels.attention import PagedKVOps

TEXT_PREFIX = "model.text_model."


def config_from_hf(config: dict[str, Any]) -> DecoderConfig:
    text = dict(config.get("text_config") or {})
    text.setdefault("tie_word_embeddings", config.get("tie_word_embeddings", False))
    return llama_config.from_hf(text)


def hf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return llama_family.hf_weights(cfg, TEXT_PREFIX)


def build(cfg: DecoderConfig, formats: Formats, kv: PagedKVOps) -> CausalLM:
    return CausalLM(cfg, formats, kv, layer=DecoderLayer, images=True)
