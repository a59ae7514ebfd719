"""The text model of a Gemma3ForConditionalGeneration folder: Gemma 3 text under `text_config`
and `language_model.model.`, built with prefill_image (image rows replace the image tokens'
embeddings)."""

from __future__ import annotations

from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gemma3 import config as gemma3_config
from mlcx.frontends.gemma3 import weights as gemma3_weights
from mlcx.frontends.gemma3.model import SandwichDecoderLayer
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.causal_lm import CausalLM
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.kernels.attention import PagedKVOps

TEXT_PREFIX = "language_model.model."
TEXT_HEAD = "language_model.lm_head.weight"


def config_from_hf(config: dict[str, Any]) -> DecoderConfig:
    text = dict(config.get("text_config") or {})
    text.setdefault("tie_word_embeddings", config.get("tie_word_embeddings", True))
    return gemma3_config.from_hf(text)


def hf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return gemma3_weights.hf_weights(cfg, TEXT_PREFIX, TEXT_HEAD)


def build(cfg: DecoderConfig, formats: Formats, kv: PagedKVOps) -> CausalLM:
    return CausalLM(cfg, formats, kv, layer=SandwichDecoderLayer, images=True)
