"""Gemma 3 with images (Gemma3ForConditionalGeneration): Gemma 3 text under `text_config` and
`language_model.`, taking the image encoder's rows (prefill_image)."""

from dataclasses import replace

from mlcx.frontends.gemma3.family import FAMILY as GEMMA3

FAMILY = replace(
    GEMMA3,
    name="gemma3_vision",
    hf_names=("Gemma3ForConditionalGeneration",),
    summary="Gemma 3 with images (SigLIP tower + projector as `embed_image`)",
    hf=replace(
        GEMMA3.hf,
        names=GEMMA3.hf.names.prefixed(
            "model.", "language_model.model.", lm_head="language_model.lm_head.weight"
        ),
        text_config="text_config",
    ),
    gguf=None,
    images=True,
    encoder="gemma3",
)
