"""Gemma 3 text: (1 + w) RMSNorms before and after attention and the MLP, GeGLU, q/k norms,
sqrt(hidden) embedding scale, local sliding-window layers with their own RoPE base interleaved
with global ones, query_pre_attn_scalar, final logit soft-capping.

Hugging Face stores the norms' w, so 1 is added at import; llama.cpp's converter stored 1 + w.
transformers and llama.cpp ignore Gemma 3's attn_logit_softcapping, and so does mlcx."""

from dataclasses import replace

import numpy as np

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules import gguf
from mlcx.frontends.rules.common import embed_scale_sqrt
from mlcx.frontends.rules.hf import activation, scalar_attention, softcaps, tie_default
from mlcx.frontends.rules.layers import (
    gguf_layer_types,
    gguf_local_rope,
    gguf_window,
    hf_layer_types,
    hf_local_rope,
    hf_window,
)
from mlcx.frontends.weight_names import LLAMA_HF

EVERY = 6  # every 6th layer global, the others local
LOCAL_THETA = 10000.0


def _plus_one(rows: np.ndarray) -> np.ndarray:
    return rows + np.asarray(1, rows.dtype)


def _gguf_attn_scale(ckpt, cfg):
    """llama.cpp has no key for query_pre_attn_scalar: head_dim, except Gemma 3 27B (62 layers),
    which scales by hidden / heads, as llama.cpp does."""
    scale = ckpt.arch_meta("attention.scale")
    if scale is None:
        scalar = cfg.hidden_size // cfg.num_heads if cfg.num_layers == 62 else cfg.head_dim
        scale = scalar**-0.5
    return {"attn_scale": float(scale), "attn_logit_softcap": 0.0}


FAMILY = Family(
    "gemma3",
    ("Gemma3ForCausalLM", "gemma3_text", "gemma3"),
    "Gemma 3 text (sandwich (1 + w) norms, GeGLU, q/k norms, local/global layers, "
    "query_pre_attn_scalar, final logit soft-capping)",
    options={"qk_norm": True, "norm_layout": "sandwich", "hidden_act": "gelu_tanh"},
    hf=HFSide(
        replace(
            LLAMA_HF.with_names(mlp_norm="model.layers.{i}.pre_feedforward_layernorm.weight"),
            norm_transform=_plus_one,
        ),
        (
            activation("hidden_activation", "hidden_act", default="gelu_pytorch_tanh"),
            tie_default(True),
            hf_window(),
            hf_layer_types(EVERY),
            hf_local_rope(LOCAL_THETA),
            scalar_attention("query_pre_attn_scalar"),
            softcaps("final_logit_softcapping"),
            embed_scale_sqrt,
        ),
    ),
    gguf=GGUFSide(
        "gemma3",
        (
            gguf_window,
            gguf_layer_types(EVERY),
            gguf_local_rope(LOCAL_THETA),
            gguf.softcaps,
            _gguf_attn_scale,  # after softcaps: Gemma 3 ignores the attention cap
            embed_scale_sqrt,
        ),
        default_rms_eps=1e-6,
    ),
)
