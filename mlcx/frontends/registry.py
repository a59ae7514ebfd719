"""The architectures mlcx can compile; the CLI's choices come from here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tvm.relax.frontend import nn

from mlcx.errors import UnsupportedModelError
from mlcx.frontends import llama_family
from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.gemma3 import config as gemma3_config
from mlcx.frontends.gemma3 import model as gemma3_model
from mlcx.frontends.gemma3 import weights as gemma3_weights
from mlcx.frontends.gemma3_vision import text as gemma3_vision_text
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.idefics3_vision import text as idefics3_text
from mlcx.frontends.llama import config as llama_config
from mlcx.frontends.llama import model as llama_model
from mlcx.frontends.llama import weights as llama_weights
from mlcx.frontends.mistral import config as mistral_config
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.phi3 import config as phi3_config
from mlcx.frontends.phi3 import weights as phi3_weights
from mlcx.frontends.qwen2 import config as qwen2_config
from mlcx.frontends.qwen2 import weights as qwen2_weights
from mlcx.frontends.qwen3 import config as qwen3_config
from mlcx.frontends.qwen3 import weights as qwen3_weights
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.kernels.attention import PagedKVOps


@dataclass(frozen=True)
class Architecture:
    name: str
    hf_names: tuple[str, ...]
    config_from_hf: Callable[[dict[str, Any]], DecoderConfig]
    build: Callable[[DecoderConfig, Formats, PagedKVOps], nn.Module]
    hf_weights: Callable[[DecoderConfig], list[WeightSpec]]
    gguf_name: str | None = None
    config_from_gguf: Callable[[GGUFCheckpoint], DecoderConfig] | None = None
    gguf_weights: Callable[[DecoderConfig], list[WeightSpec]] | None = None
    encoder: str | None = None  # the image encoder family (frontends.encoders), if any


ARCHITECTURES: dict[str, Architecture] = {
    a.name: a
    for a in [
        Architecture(
            "llama",
            ("LlamaForCausalLM", "llama"),
            llama_config.from_hf,
            llama_model.build,
            llama_weights.hf_weights,
            "llama",
            llama_config.from_gguf,
            llama_weights.gguf_weights,
        ),
        Architecture(
            "mistral",
            ("MistralForCausalLM", "mistral"),
            mistral_config.from_hf,
            llama_model.build,
            llama_family.hf_weights,
        ),
        Architecture(
            "qwen2",
            ("Qwen2ForCausalLM", "qwen2"),
            qwen2_config.from_hf,
            llama_model.build,
            llama_family.hf_weights,
            "qwen2",
            qwen2_config.from_gguf,
            qwen2_weights.gguf_weights,
        ),
        Architecture(
            "qwen3",
            ("Qwen3ForCausalLM", "qwen3"),
            qwen3_config.from_hf,
            llama_model.build,
            llama_family.hf_weights,
            "qwen3",
            qwen3_config.from_gguf,
            qwen3_weights.gguf_weights,
        ),
        Architecture(
            "phi3",
            ("Phi3ForCausalLM", "phi3"),
            phi3_config.from_hf,
            llama_model.build,
            phi3_weights.hf_weights,
            "phi3",
            phi3_config.from_gguf,
            phi3_weights.gguf_weights,
        ),
        Architecture(
            "gemma3",
            ("Gemma3ForCausalLM", "gemma3_text", "gemma3"),
            gemma3_config.from_hf,
            gemma3_model.build,
            gemma3_weights.hf_weights,
            "gemma3",
            gemma3_config.from_gguf,
            gemma3_weights.gguf_weights,
        ),
        Architecture(
            "gemma3_vision",
            ("Gemma3ForConditionalGeneration",),
            gemma3_vision_text.config_from_hf,
            gemma3_vision_text.build,
            gemma3_vision_text.hf_weights,
            encoder="gemma3",
        ),
        Architecture(
            "idefics3",
            ("Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration"),
            idefics3_text.config_from_hf,
            idefics3_text.build,
            idefics3_text.hf_weights,
            encoder="idefics3",
        ),
    ]
}


def _supported() -> str:
    return ", ".join(name for a in ARCHITECTURES.values() for name in a.hf_names[:1])


def for_hf(name: str) -> Architecture:
    for arch in ARCHITECTURES.values():
        if name in arch.hf_names:
            return arch
    raise UnsupportedModelError(
        f"architecture {name or '(none)'!r} is not supported; mlcx compiles: {_supported()}"
    )


def for_gguf(name: str) -> Architecture:
    for arch in ARCHITECTURES.values():
        if arch.gguf_name == name:
            return arch
    gguf = [a.gguf_name for a in ARCHITECTURES.values() if a.gguf_name]
    raise UnsupportedModelError(
        f"GGUF architecture {name or '(none)'!r} is not supported; mlcx reads GGUF files of: "
        f"{', '.join(gguf)} (other architectures: compile their Hugging Face folder)"
    )
