"""Qwen3.5-MoE as released (Qwen3_5MoeForConditionalGeneration): its text model alone, as
the qwen3_5_vl family reads Qwen3.5's."""

from mlcx.frontends.qwen3_5_moe.family import FAMILY as QWEN35_MOE
from mlcx.frontends.qwen3_5_vl.family import multimodal

FAMILY = multimodal(QWEN35_MOE, "qwen3_5_moe_vl", "Qwen3_5MoeForConditionalGeneration")
