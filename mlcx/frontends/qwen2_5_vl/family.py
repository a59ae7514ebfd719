"""Qwen2.5-VL (Qwen2_5_VLForConditionalGeneration): Qwen2 text (q/k/v biases) under
`text_config` (or at the top level, as released configs have it) with M-RoPE over contiguous
sections, taking the image rows of the Qwen vision tower (prefill_image). llama.cpp writes its
text model as `qwen2vl`."""

from dataclasses import replace

from mlcx.frontends.family import GGUFSide
from mlcx.frontends.qwen2.family import FAMILY as QWEN2
from mlcx.frontends.rules.mrope import MROPE_TARGETS, gguf_mrope, hf_mrope

FAMILY = replace(
    QWEN2,
    name="qwen2_5_vl",
    hf_names=("Qwen2_5_VLForConditionalGeneration",),
    summary="Qwen2.5-VL with images (dynamic-resolution vision tower with window attention, "
    "2x2 merge; Qwen2 text with M-RoPE)",
    hf=replace(QWEN2.hf, rules=(hf_mrope(interleaved=False),), text_config="text_config"),
    gguf=GGUFSide("qwen2vl", (gguf_mrope(interleaved=False),), default_rms_eps=1e-6),
    images=True,
    targets=MROPE_TARGETS,
    encoder="qwen2_5_vl",
)
