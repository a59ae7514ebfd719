"""Gemma 2: Gemma's sandwich (1 + w) norms, GeGLU and sqrt(hidden) embedding scale, every other
layer windowed, attention-score and final-logit soft-capping, query_pre_attn_scalar; no q/k
norms, one RoPE base for every layer."""

from dataclasses import replace

from mlcx.frontends.family import Family, HFSide
from mlcx.frontends.gemma3.family import FAMILY as GEMMA3
from mlcx.frontends.rules import gguf
from mlcx.frontends.rules.common import embed_scale_sqrt
from mlcx.frontends.rules.hf import activation, scalar_attention, softcaps, tie_default
from mlcx.frontends.rules.layers import gguf_layer_types, gguf_window, hf_layer_types, hf_window

EVERY = 2  # every 2nd layer global


def _gguf_attn_scale(ckpt, cfg):
    """llama.cpp has no key for query_pre_attn_scalar: head_dim, except Gemma 2 27B (46
    layers), which scales by hidden / heads, as llama.cpp does."""
    scalar = cfg.hidden_size // cfg.num_heads if cfg.num_layers == 46 else cfg.head_dim
    return {"attn_scale": float(ckpt.arch_meta("attention.scale", scalar**-0.5))}


FAMILY = Family(
    "gemma2",
    ("Gemma2ForCausalLM", "gemma2"),
    "Gemma 2 (sandwich (1 + w) norms, GeGLU, every other layer windowed, attention and final "
    "soft-capping, query_pre_attn_scalar)",
    options={"norm_layout": "sandwich", "hidden_act": "gelu_tanh"},
    hf=HFSide(
        GEMMA3.hf.names,  # Gemma's names and (1 + w) norms
        (
            activation("hidden_activation", "hidden_act", default="gelu_pytorch_tanh"),
            tie_default(True),
            hf_window(),
            hf_layer_types(EVERY),
            scalar_attention("query_pre_attn_scalar"),
            softcaps("final_logit_softcapping", "attn_logit_softcapping"),
            embed_scale_sqrt,
        ),
    ),
    gguf=replace(
        GEMMA3.gguf,
        arch="gemma2",
        rules=(
            gguf_window,
            gguf_layer_types(EVERY),
            gguf.softcaps,
            _gguf_attn_scale,
            embed_scale_sqrt,
        ),
    ),
)
