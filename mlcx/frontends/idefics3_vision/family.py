"""Idefics3 / SmolVLM with images: a Llama text model under `text_config` and
`model.text_model.`, taking the image encoder's rows (prefill_image)."""

from dataclasses import replace

from mlcx.frontends.llama.family import FAMILY as LLAMA

FAMILY = replace(
    LLAMA,
    name="idefics3",
    hf_names=("Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration"),
    summary="Idefics3 / SmolVLM with images (SigLIP tower, pixel shuffle + projection, Llama "
    "text; image tiles plus the global image)",
    hf=replace(
        LLAMA.hf,
        names=LLAMA.hf.names.prefixed("model.", "model.text_model."),
        text_config="text_config",
    ),
    gguf=None,
    images=True,
    encoder="idefics3",
)
