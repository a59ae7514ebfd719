"""Where Qwen3's weights live in a llama.cpp GGUF file (in a Hugging Face
checkpoint: llama_family.hf_weights)."""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gguf.weights import decoder_weights
from mlcx.frontends.weight_spec import WeightSpec


def gguf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    # llama.cpp runs qwen3 with NeoX-style RoPE, so its converter keeps the q/k rows as they are
    return decoder_weights(cfg, rope_permuted=False)
