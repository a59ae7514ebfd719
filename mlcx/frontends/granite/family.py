"""Granite (3.x dense): Llama's decoder with multipliers on the embeddings, each residual branch
and the attention scores, and the logits divided by logits_scaling."""

from dataclasses import replace

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.gguf import biases_from_tensors
from mlcx.frontends.rules.hf import flag, refuse
from mlcx.frontends.weight_names import GGUF


def _hf_multipliers(r, cfg):
    return {
        "embed_scale": float(r.get("embedding_multiplier", default=1.0)),
        "residual_scale": float(r.get("residual_multiplier", default=1.0)),
        "attn_scale": float(r.get("attention_multiplier", default=cfg.head_dim**-0.5)),
        "logits_divisor": float(r.get("logits_scaling", default=1.0)),
    }


def _gguf_multipliers(ckpt, cfg):
    """The same numbers as llama.cpp's converter renames them (`*_scale`)."""
    return {
        "embed_scale": float(ckpt.arch_meta("embedding_scale", 1.0)),
        "residual_scale": float(ckpt.arch_meta("residual_scale", 1.0)),
        "attn_scale": float(ckpt.arch_meta("attention.scale", cfg.head_dim**-0.5)),
        "logits_divisor": float(ckpt.arch_meta("logit_scale", 1.0)),
    }


FAMILY = Family(
    "granite",
    ("GraniteForCausalLM", "granite"),
    "Granite 3 (embedding, residual and attention multipliers, logits scaling)",
    hf=HFSide(
        rules=(flag("attention_bias", "qkv_bias", "o_bias"), _hf_multipliers),
        checks=(refuse("mlp_bias", "biases on the MLP are not implemented"),),
    ),
    gguf=GGUFSide(
        "granite", (biases_from_tensors, _gguf_multipliers), replace(GGUF, rope_permuted=True)
    ),
)
