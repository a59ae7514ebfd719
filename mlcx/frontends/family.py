"""A generative model family as a declaration over the shared decoder.

A family says what its checkpoints are called (Hugging Face architectures, llama.cpp's
architecture name), which DecoderConfig options it fixes, the config rules that read the rest
(mlcx.frontends.rules) and where its weights live (mlcx.frontends.weight_names); the shared
decoder (mlcx.frontends.nn) is built from the config alone. A family folder holds a `family.py`
defining FAMILY, and nothing else unless its math is new; the registry finds it there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tvm.relax.frontend import nn

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.decoder_weights import decoder_weights
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.hf_config import HFConfigReader
from mlcx.frontends.nn.blocks import Formats
from mlcx.frontends.nn.hybrid_lm import decoder_model
from mlcx.frontends.rules import gguf as gguf_rules
from mlcx.frontends.rules import hf as hf_rules
from mlcx.frontends.tensors import TensorSource
from mlcx.frontends.weight_names import GGUF, LLAMA_HF, WeightNames
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.kernels.attention import PagedKVOps
from mlcx.kernels.lora_layout import LoraLayout


@dataclass(frozen=True)
class HFSide:
    """How a Hugging Face folder of the family reads."""

    names: WeightNames = LLAMA_HF
    rules: tuple[hf_rules.HFRule, ...] = ()
    checks: tuple[hf_rules.HFCheck, ...] = ()  # refusals, before anything is read
    # the text model's config sits under this key (a multimodal folder's `text_config`)
    text_config: str | None = None
    # the checkpoint's tensors as `names` names them, where the family stores some otherwise
    # (gpt-oss: experts transposed, or as MXFP4 *_blocks/*_scales, gate and up interleaved)
    view: Callable[[TensorSource, DecoderConfig], TensorSource] | None = None


@dataclass(frozen=True)
class GGUFSide:
    """How a llama.cpp GGUF file of the family reads."""

    arch: str  # llama.cpp's architecture name (general.architecture)
    rules: tuple[gguf_rules.GGUFRule, ...] = ()
    names: WeightNames = GGUF
    default_rms_eps: float = 1e-5  # llama.cpp's, where the file leaves it out
    # llama.cpp writes some mixtures of experts under a dense architecture's name (Mixtral as
    # `llama`): a file is this family's when it has experts exactly where this has (None:
    # with or without, the family's rules read which)
    experts: bool | None = False


@dataclass(frozen=True)
class Family:
    name: str
    hf_names: tuple[str, ...]  # config.json `architectures` (first: the one named in errors)
    summary: str  # one line for docs/models.md
    options: Mapping[str, Any] = field(default_factory=dict)  # DecoderConfig fields, fixed
    hf: HFSide = HFSide()
    gguf: GGUFSide | None = None
    images: bool = False  # exports prefill_image: image rows replace the image tokens' rows
    encoder: str | None = None  # the image encoder family (frontends.encoders), if any
    # the targets whose runtimes run the family so far; empty: every target
    targets: tuple[str, ...] = ()

    def config_from_hf(self, config: dict[str, Any]) -> DecoderConfig:
        outer = config
        if self.hf.text_config:
            # released Qwen2.5-VL configs keep the text model's keys at the top level
            config = dict(config.get(self.hf.text_config) or outer)
            if "tie_word_embeddings" in outer:
                config.setdefault("tie_word_embeddings", outer["tie_word_embeddings"])
        reader = HFConfigReader(config, self.name, outer)
        for check in self.hf.checks:
            check(reader)
        return self._ruled(hf_rules.base_config(reader), reader, self.hf.rules)

    def config_from_gguf(self, ckpt: GGUFCheckpoint) -> DecoderConfig:
        if self.gguf is None:
            raise ValueError(f"{self.name} has no GGUF side")
        base = gguf_rules.base_config(ckpt, self.gguf.default_rms_eps)
        return self._ruled(base, ckpt, self.gguf.rules)

    def _ruled(self, cfg: DecoderConfig, reader: Any, rules: tuple) -> DecoderConfig:
        cfg = dataclasses.replace(cfg, **self.options)
        for rule in rules:
            cfg = dataclasses.replace(cfg, **rule(reader, cfg))
        return cfg

    def hf_tensors(self, ckpt: TensorSource, cfg: DecoderConfig) -> TensorSource:
        return ckpt if self.hf.view is None else self.hf.view(ckpt, cfg)

    def hf_weights(self, cfg: DecoderConfig) -> list[WeightSpec]:
        return decoder_weights(cfg, self.hf.names)

    def gguf_weights(self, cfg: DecoderConfig) -> list[WeightSpec]:
        if self.gguf is None:
            raise ValueError(f"{self.name} has no GGUF side")
        return decoder_weights(cfg, self.gguf.names)

    def build(
        self, cfg: DecoderConfig, formats: Formats, kv: PagedKVOps, lora: LoraLayout | None = None
    ) -> nn.Module:
        """`lora`: adapter slots the step functions take (mlcx.kernels.lora_layout)."""
        return decoder_model(cfg, formats, kv, self.images, lora)

    def with_images(self) -> Family:
        """The family's text model taking image rows (a GGUF text model with an mmproj)."""
        return dataclasses.replace(self, images=True)
