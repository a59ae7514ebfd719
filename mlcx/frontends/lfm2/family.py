"""LFM2: short causal convolutions (B * x through a depthwise conv of `conv_L_cache` taps, gated
by C) beside attention layers with q/k RMSNorms; a tied head; the MLP's width adjusted from
`block_ff_dim` as transformers does; the final norm is `embedding_norm`."""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.hybrid import gguf_conv_layers, hf_conv_layers
from mlcx.frontends.weight_names import GGUF, LLAMA_HF

_LAYER = "model.layers.{i}."


def _hf_tie(r, cfg):
    """Tied unless the config says not (Liquid's own configs name it `tie_embedding`)."""
    tied = r.get("tie_word_embeddings", "tie_embedding", default=True)
    return {"tie_word_embeddings": bool(tied)}


def _hf_eps(r, cfg):
    return {"rms_norm_eps": float(r.get("norm_eps", "rms_norm_eps", default=1e-5))}


def _hf_ffn_width(r, cfg):
    """`block_auto_adjust_ff_dim`: 2/3 of the width, times the multiplier, rounded up to
    `block_multiple_of` (transformers' Lfm2MLP)."""
    width = cfg.intermediate_size
    if not r.config.get("block_auto_adjust_ff_dim", True):
        return {}
    width = int(2 * width / 3)
    multiplier, multiple = (
        r.config.get("block_ffn_dim_multiplier"),
        int(r.config.get("block_multiple_of", 256)),
    )
    if multiplier is not None:
        width = int(multiplier * width)
        width = multiple * ((width + multiple - 1) // multiple)
    return {"intermediate_size": width}


def _conv(part: str) -> str:
    return f"{_LAYER}conv.{part}"


FAMILY = Family(
    "lfm2",
    ("Lfm2ForCausalLM", "lfm2"),
    "LFM2 (hybrid: short convolutions and attention with q/k norms, tied head)",
    options={"qk_norm": True},
    hf=HFSide(
        LLAMA_HF.with_names(
            attn_norm=_LAYER + "operator_norm.weight",
            mlp_norm=_LAYER + "ffn_norm.weight",
            o=_LAYER + "self_attn.out_proj.weight",
            q_norm=_LAYER + "self_attn.q_layernorm.weight",
            k_norm=_LAYER + "self_attn.k_layernorm.weight",
            gate=_LAYER + "feed_forward.w1.weight",
            up=_LAYER + "feed_forward.w3.weight",
            down=_LAYER + "feed_forward.w2.weight",
            norm="model.embedding_norm.weight",
            **{f"conv_{p}": _conv(f"{p}_proj.weight") for p in ("in", "out")},
            **{f"conv_{p}_bias": _conv(f"{p}_proj.bias") for p in ("in", "out")},
            conv_taps=_conv("conv.weight"),
            conv_taps_bias=_conv("conv.bias"),
        ),
        (hf_conv_layers, _hf_tie, _hf_eps, _hf_ffn_width),
    ),
    # llama.cpp names LFM2's final norm token_embd_norm
    gguf=GGUFSide(
        "lfm2", (gguf_conv_layers,), GGUF.with_names(norm="token_embd_norm.weight"), 1e-5
    ),
)
