"""Qwen3-VL (Qwen3VLForConditionalGeneration): Qwen3 text under `text_config` and
`model.language_model.` with interleaved M-RoPE, taking the image rows of the Qwen vision
tower, whose deepstack blocks join the image tokens' hidden states after the first layers.
llama.cpp writes its text model as `qwen3vl`."""

from dataclasses import replace

from mlcx.frontends.family import GGUFSide
from mlcx.frontends.qwen3.family import FAMILY as QWEN3
from mlcx.frontends.rules.mrope import (
    MROPE_TARGETS,
    gguf_deepstack,
    gguf_mrope,
    hf_deepstack,
    hf_mrope,
)

FAMILY = replace(
    QWEN3,
    name="qwen3_vl",
    hf_names=("Qwen3VLForConditionalGeneration",),
    summary="Qwen3-VL with images (dynamic-resolution vision tower, learned position grid, "
    "deepstack features; Qwen3 text with interleaved M-RoPE)",
    hf=replace(
        QWEN3.hf,
        names=QWEN3.hf.names.prefixed("model.", "model.language_model.", lm_head="lm_head.weight"),
        rules=(hf_mrope(interleaved=True), hf_deepstack),
        text_config="text_config",
    ),
    gguf=GGUFSide("qwen3vl", (gguf_mrope(interleaved=True), gguf_deepstack), default_rms_eps=1e-6),
    images=True,
    targets=MROPE_TARGETS,
    encoder="qwen3_vl",
)
