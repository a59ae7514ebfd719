"""Phi-3 / Phi-3.5 / Phi-4-mini: fused q/k/v and gate/up tensors, LongRoPE, an optional sliding
window, RoPE over part of each head (partial_rotary_factor, GGUF rope.dimension_count)."""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.layers import gguf_window, hf_window
from mlcx.frontends.weight_names import GGUF, LLAMA_HF
from mlcx.kernels.rope_scaling import longrope_attention_factor


def _gguf_longrope(ckpt, cfg):
    """llama.cpp keeps LongRoPE's factors as tensors and the pretraining length as metadata."""
    if "rope_factors_long.weight" not in ckpt.names():
        return {}
    original = int(ckpt.arch_meta("rope.scaling.original_context_length", cfg.context_window))
    factors = {
        f"{kind}_factor": ckpt.get(f"rope_factors_{kind}.weight").to_float().tolist()
        for kind in ("short", "long")
    }
    attention = ckpt.arch_meta("rope.scaling.attn_factor")
    if attention is None:
        attention = longrope_attention_factor(cfg.context_window / original, original)
    scaling = {"rope_type": "longrope", **factors, "original_max_position_embeddings": original}
    return {"rope_scaling": {**scaling, "attention_factor": float(attention)}}


FAMILY = Family(
    "phi3",
    ("Phi3ForCausalLM", "phi3"),
    "Phi-3 / Phi-3.5 / Phi-4-mini (fused qkv and gate_up, LongRoPE, sliding window, "
    "`partial_rotary_factor`)",
    hf=HFSide(
        LLAMA_HF.with_names(
            qkv="model.layers.{i}.self_attn.qkv_proj.weight",
            gate_up="model.layers.{i}.mlp.gate_up_proj.weight",
        ),
        (hf_window(),),
    ),
    # llama.cpp runs phi3 with NeoX-style RoPE: its converter keeps the q/k rows as they are
    gguf=GGUFSide(
        "phi3",
        (_gguf_longrope, gguf_window),
        GGUF.with_names(qkv="blk.{i}.attn_qkv.weight", gate_up="blk.{i}.ffn_up.weight"),
    ),
)
