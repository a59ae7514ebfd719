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
from mlcx.frontends.mixtral import config as mixtral_config
from mlcx.frontends.mixtral import model as mixtral_model
from mlcx.frontends.mixtral import weights as mixtral_weights
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.olmoe import config as olmoe_config
from mlcx.frontends.olmoe import model as olmoe_model
from mlcx.frontends.olmoe import weights as olmoe_weights
from mlcx.frontends.phi3 import config as phi3_config
from mlcx.frontends.phi3 import weights as phi3_weights
from mlcx.frontends.qwen2 import config as qwen2_config
from mlcx.frontends.qwen2 import weights as qwen2_weights
from mlcx.frontends.qwen3 import config as qwen3_config
from mlcx.frontends.qwen3 import weights as qwen3_weights
from mlcx.frontends.qwen3_moe import config as qwen3_moe_config
from mlcx.frontends.qwen3_moe import model as qwen3_moe_model
from mlcx.frontends.qwen3_moe import weights as qwen3_moe_weights
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
    # llama.cpp writes some mixtures of experts under a dense architecture's name (Mixtral as
    # `llama`): a file is this architecture's when it has experts exactly where this has
    gguf_experts: bool = False
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
            "qwen3_moe",
            ("Qwen3MoeForCausalLM", "qwen3_moe"),
            qwen3_moe_config.from_hf,
            qwen3_moe_model.build,
            qwen3_moe_weights.hf_weights,
            "qwen3moe",
            qwen3_moe_config.from_gguf,
            qwen3_moe_weights.gguf_weights,
            gguf_experts=True,
        ),
        Architecture(
            "mixtral",
            ("MixtralForCausalLM", "mixtral"),
            mixtral_config.from_hf,
            mixtral_model.build,
            mixtral_weights.hf_weights,
            "llama",
            mixtral_config.from_gguf,
            mixtral_weights.gguf_weights,
            gguf_experts=True,
        ),
        Architecture(
            "olmoe",
            ("OlmoeForCausalLM", "olmoe"),
            olmoe_config.from_hf,
            olmoe_model.build,
            olmoe_weights.hf_weights,
            "olmoe",
            olmoe_config.from_gguf,
            olmoe_weights.gguf_weights,
            gguf_experts=True,
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


def gguf_architectures() -> list[str]:
    """llama.cpp architecture names mlcx reads, in registry order, once each."""
    return list(dict.fromkeys(a.gguf_name for a in ARCHITECTURES.values() if a.gguf_name))


def describe_supported() -> str:
    """The architectures for help texts: Hugging Face's names, then llama.cpp's."""
    return f"Hugging Face: {_supported()}; GGUF: {', '.join(gguf_architectures())}"


def for_hf(name: str) -> Architecture:
    for arch in ARCHITECTURES.values():
        if name in arch.hf_names:
            return arch
    raise UnsupportedModelError(
        f"architecture {name or '(none)'!r} is not supported; mlcx compiles: {_supported()}"
    )


def for_gguf(name: str, has_experts: bool = False) -> Architecture:
    """The architecture of a GGUF file of llama.cpp architecture `name`; `has_experts`: the
    file's `{name}.expert_count` is positive (Mixtral is written as `llama`)."""
    named = [a for a in ARCHITECTURES.values() if a.gguf_name == name]
    for arch in named:
        if arch.gguf_experts == has_experts:
            return arch
    if named:
        kind = "mixture-of-experts" if has_experts else "dense"
        raise UnsupportedModelError(
            f"GGUF architecture {name!r} as a {kind} model is not supported; mlcx reads "
            f"{name!r} files as: {', '.join(a.name for a in named)}"
        )
    gguf = gguf_architectures()
    raise UnsupportedModelError(
        f"GGUF architecture {name or '(none)'!r} is not supported; mlcx reads GGUF files of: "
        f"{', '.join(gguf)} (other architectures: compile their Hugging Face folder)"
    )
