"""Where a Qwen3 embedding model's weights live: Qwen3's decoder names (weight_names), under
`prefix` ("" for a saved Qwen3Model, "model." for a causal-LM checkpoint), without lm_head."""

from __future__ import annotations

from dataclasses import replace

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.decoder_weights import decoder_weights
from mlcx.frontends.weight_names import LLAMA_HF
from mlcx.frontends.weight_spec import WeightSpec

_DECODER_PREFIX = "model."


def _renamed(spec: WeightSpec, prefix: str) -> WeightSpec:
    sources = tuple(prefix + s.removeprefix(_DECODER_PREFIX) for s in spec.sources)
    target = "words" if spec.target == "embed" else spec.target
    return replace(spec, target=target, sources=sources)


def hf_weights(cfg: DecoderConfig, prefix: str) -> list[WeightSpec]:
    # tied: the decoder's list then has no lm_head, which an embedder never reads
    specs = decoder_weights(replace(cfg, tie_word_embeddings=True), LLAMA_HF)
    return [_renamed(spec, prefix) for spec in specs]
