"""Gemma 4's text model in the folders Google publishes (Gemma4ForConditionalGeneration): the
config under `text_config`, the weights under `model.language_model.`. The vision and audio
towers are not SigLIP's (mlcx.frontends.gemma4.family) and are not compiled: the artifact
reads and writes text."""

from dataclasses import replace

from mlcx.frontends.gemma4.family import FAMILY as GEMMA4

FAMILY = replace(
    GEMMA4,
    name="gemma4_multimodal",
    hf_names=("Gemma4ForConditionalGeneration", "gemma4"),
    summary="Gemma 4's text model from a multimodal folder (its vision and audio towers are "
    "not compiled)",
    hf=replace(
        GEMMA4.hf,
        names=GEMMA4.hf.names.prefixed("model.", "model.language_model."),
        text_config="text_config",
    ),
    gguf=None,  # llama.cpp writes the text model as `gemma4` (the gemma4 family)
)
