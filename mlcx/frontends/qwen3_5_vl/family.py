"""Qwen3.5 and Qwen3.5-MoE as released (Qwen3_5ForConditionalGeneration,
Qwen3_5MoeForConditionalGeneration): the text model under `text_config` and
`model.language_model.`, compiled alone (the vision tower and the MTP layer are left out).
llama.cpp's converter writes these folders' text model as `qwen35` / `qwen35moe` files, which
the qwen3_5 and qwen3_5_moe families read."""

from dataclasses import replace

from mlcx.frontends.family import Family
from mlcx.frontends.qwen3_5.family import FAMILY as QWEN35


def multimodal(family: Family, name: str, hf_name: str) -> Family:
    """`family`'s text model as the multimodal checkpoint `hf_name` keeps it."""
    names = family.hf.names.prefixed("model.", "model.language_model.")
    return replace(
        family,
        name=name,
        hf_names=(hf_name,),
        summary=f"{family.summary.split(' (')[0]}'s text model from the released multimodal "
        "checkpoint (the vision tower is left out)",
        hf=replace(family.hf, names=names, text_config="text_config"),
        gguf=None,
    )


FAMILY = multimodal(QWEN35, "qwen3_5_vl", "Qwen3_5ForConditionalGeneration")
