"""The image encoders mlcx can compile, by family; a generative Family names its encoder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm.relax.frontend import nn

from mlcx.errors import UnsupportedModelError
from mlcx.frontends import mmproj_meta
from mlcx.frontends.gemma3_vision import config as gemma3_vision_config
from mlcx.frontends.gemma3_vision import layout as gemma3_layout
from mlcx.frontends.gemma3_vision import mmproj as gemma3_mmproj
from mlcx.frontends.gemma3_vision import model as gemma3_vision_model
from mlcx.frontends.gemma3_vision import weights as gemma3_vision_weights
from mlcx.frontends.gguf.checkpoint import GGUFCheckpoint
from mlcx.frontends.idefics3_vision import config as idefics3_config
from mlcx.frontends.idefics3_vision import layout as idefics3_layout
from mlcx.frontends.idefics3_vision import mmproj as idefics3_mmproj
from mlcx.frontends.idefics3_vision import model as idefics3_model
from mlcx.frontends.idefics3_vision import weights as idefics3_weights
from mlcx.frontends.qwen_vision import config as qwen_config
from mlcx.frontends.qwen_vision import inputs as qwen_inputs
from mlcx.frontends.qwen_vision import layout as qwen_layout
from mlcx.frontends.qwen_vision import mmproj as qwen_mmproj
from mlcx.frontends.qwen_vision import model as qwen_model
from mlcx.frontends.qwen_vision import weights as qwen_weights
from mlcx.frontends.tensors import TensorSource


@dataclass(frozen=True)
class EncoderFamily:
    name: str
    config_from_hf: Callable[[dict[str, Any]], Any]  # -> the family's config (to_dict())
    config_from_dict: Callable[[dict[str, Any]], Any]
    build: Callable[[Any, str], nn.Module]  # (config, dtype) -> module exporting embed_image
    arrays: Callable[[list[str], TensorSource, str], Iterator[tuple[str, np.ndarray]]]
    # (tokenizer, config) -> (the image marker the chat template writes, the text it becomes)
    image_text: Callable[[Any, Any], tuple[str, str]]
    bidirectional: bool  # a prompt's image tokens see their whole image (Gemma 3), or causal
    # a llama.cpp mmproj GGUF of this family: for text GGUFs of `text_archs`
    text_archs: tuple[str, ...] = ()
    config_from_mmproj: Callable[..., Any] | None = None  # (mmproj, text hidden, token_id)
    mmproj_arrays: (
        Callable[[list[str], GGUFCheckpoint, str], Iterator[tuple[str, np.ndarray]]] | None
    ) = None
    # embed_image's inputs before the weights, from the config (None: one `pixels` image)
    inputs: Callable[[Any], tuple[str, ...]] | None = None
    # (mmproj, config) -> how llama.cpp resizes the mmproj's images, as artifact.encoder.
    # Preprocess fields besides the mean and std every mmproj gives (None: a fixed square of
    # the config's image_size, bilinear)
    mmproj_preprocess: Callable[[GGUFCheckpoint, Any], dict[str, Any]] | None = None


def _qwen(name: str, config_from_hf: Callable, config_from_mmproj: Callable) -> EncoderFamily:
    """A Qwen-VL tower; its llama.cpp text GGUF (qwen2vl, qwen3vl) reads as family `name`."""
    return EncoderFamily(
        name,
        config_from_hf,
        qwen_config.VisionConfig.from_dict,
        qwen_model.ImageEncoder,
        qwen_weights.encoder_arrays,
        qwen_layout.image_text,
        False,
        (name,),
        config_from_mmproj,
        qwen_mmproj.mmproj_arrays,
        inputs=qwen_inputs.input_names,
        mmproj_preprocess=qwen_mmproj.preprocess,
    )


ENCODERS: dict[str, EncoderFamily] = {
    "gemma3": EncoderFamily(
        "gemma3",
        gemma3_vision_config.from_hf,
        gemma3_vision_config.VisionConfig.from_dict,
        gemma3_vision_model.ImageEncoder,
        gemma3_vision_weights.encoder_arrays,
        gemma3_layout.image_text,
        True,
        ("gemma3",),
        gemma3_mmproj.config_from_mmproj,
        gemma3_mmproj.mmproj_arrays,
    ),
    "idefics3": EncoderFamily(
        "idefics3",
        idefics3_config.from_hf,
        idefics3_config.VisionConfig.from_dict,
        idefics3_model.ImageEncoder,
        idefics3_weights.encoder_arrays,
        idefics3_layout.image_text,
        False,
        ("llama",),  # SmolVLM's and Idefics3's text models convert as Llama
        idefics3_mmproj.config_from_mmproj,
        idefics3_mmproj.mmproj_arrays,
        mmproj_preprocess=idefics3_mmproj.preprocess,
    ),
    "qwen2_5_vl": _qwen("qwen2_5_vl", qwen_config.from_hf_qwen2_5, qwen_mmproj.config_qwen2_5),
    "qwen3_vl": _qwen("qwen3_vl", qwen_config.from_hf_qwen3, qwen_mmproj.config_qwen3),
}
# llama.cpp's projector type -> family
PROJECTOR_TYPES = {
    "gemma3": "gemma3",
    "idefics3": "idefics3",
    "qwen2.5vl_merger": "qwen2_5_vl",
    "qwen3vl_merger": "qwen3_vl",
}


def for_mmproj(ckpt: GGUFCheckpoint, text_arch: str, text_hidden: int) -> EncoderFamily:
    """The family of an mmproj file, checked against the text model's architecture and width
    (the projector's rows become the text model's embeddings)."""
    kind = mmproj_meta.projector_type(ckpt)
    if kind not in PROJECTOR_TYPES:
        raise UnsupportedModelError(
            f"{ckpt.path}: projector type {kind or '(none)'!r} is not supported; mlcx reads "
            f"mmproj files of: {', '.join(PROJECTOR_TYPES)} (give one of those, or the model's "
            "Hugging Face folder)"
        )
    family = ENCODERS[PROJECTOR_TYPES[kind]]
    if text_arch not in family.text_archs:
        raise UnsupportedModelError(
            f"{ckpt.path}: projector type {kind!r} goes with a {'/'.join(family.text_archs)} "
            f"text model, not {text_arch}: give the text GGUF converted from the same model"
        )
    width = ckpt.meta("clip.vision.projection_dim")
    if width is not None and int(width) != text_hidden:
        raise UnsupportedModelError(
            f"{ckpt.path} projects images to {int(width)} features, the text model's hidden "
            f"size is {text_hidden}: give the text GGUF converted from the same model"
        )
    return family
