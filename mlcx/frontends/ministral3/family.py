"""Ministral 3: Mistral's decoder with YaRN RoPE and Llama 4's query scaling by position
(queries times 1 + beta * log(1 + floor(position / original context)))."""

from dataclasses import replace

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.layers import hf_window
from mlcx.frontends.weight_names import GGUF


def _hf_query_scale(r, cfg):
    params = r.config.get("rope_parameters") or r.config.get("rope_scaling") or {}
    beta = float(params.get("llama_4_scaling_beta") or 0.0)
    if not beta:
        return {}
    period = int(params.get("original_max_position_embeddings") or cfg.context_window)
    return {"q_position_beta": beta, "q_position_period": period}


def _gguf_query_scale(ckpt, cfg):
    """llama.cpp: `attention.temperature_scale` over YaRN's original context length."""
    beta = float(ckpt.arch_meta("attention.temperature_scale", 0.0))
    if not beta:
        return {}
    period = int(ckpt.arch_meta("rope.scaling.original_context_length", cfg.context_window))
    return {"q_position_beta": beta, "q_position_period": period}


FAMILY = Family(
    "ministral3",
    ("Ministral3ForCausalLM", "ministral3"),
    "Ministral 3 (YaRN RoPE, queries scaled by position past the original context)",
    hf=HFSide(rules=(hf_window(), _hf_query_scale)),
    gguf=GGUFSide("mistral3", (_gguf_query_scale,), replace(GGUF, rope_permuted=True)),
)
