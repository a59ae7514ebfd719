"""Where Gemma 3's weights live in a Hugging Face checkpoint and in a llama.cpp GGUF file.

Gemma's RMSNorm scales by (1 + w). Hugging Face stores w, so 1 is added here; llama.cpp's
converter already stored 1 + w."""

from __future__ import annotations

import numpy as np

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.weight_spec import RowTransform, WeightSpec
from mlcx.quantization.schemes import Role


def _plus_one(rows: np.ndarray) -> np.ndarray:
    return rows + np.asarray(1, rows.dtype)


# mlcx name -> (Hugging Face name, GGUF name); {i} is the layer
_NORMS = {
    "input_norm.weight": ("input_layernorm", "attn_norm"),
    "post_attn_norm.weight": ("post_attention_layernorm", "post_attention_norm"),
    "pre_mlp_norm.weight": ("pre_feedforward_layernorm", "ffn_norm"),
    "post_mlp_norm.weight": ("post_feedforward_layernorm", "post_ffw_norm"),
    "attn.q_norm.weight": ("self_attn.q_norm", "attn_q_norm"),
    "attn.k_norm.weight": ("self_attn.k_norm", "attn_k_norm"),
}
_HF_LINEAR = {
    "attn.qkv": tuple(f"self_attn.{p}_proj" for p in "qkv"),
    "attn.o": ("self_attn.o_proj",),
    "mlp.gate_up": ("mlp.gate_proj", "mlp.up_proj"),
    "mlp.down": ("mlp.down_proj",),
}
_GGUF_LINEAR = {
    "attn.qkv": ("attn_q", "attn_k", "attn_v"),
    "attn.o": ("attn_output",),
    "mlp.gate_up": ("ffn_gate", "ffn_up"),
    "mlp.down": ("ffn_down",),
}


def _specs(
    cfg: DecoderConfig, layer: str, top: dict[str, str], gguf: bool, norm: RowTransform | None
) -> list[WeightSpec]:
    column = 1 if gguf else 0
    linear = _GGUF_LINEAR if gguf else _HF_LINEAR
    transforms = (norm,) if norm else ()
    specs = [WeightSpec("embed", Role.EMBEDDING, (top["embed"],))]
    for i in range(cfg.num_layers):
        src, dst = layer.format(i=i), f"layers.{i}."
        specs += [
            WeightSpec(dst + name, Role.VECTOR, (f"{src}{pair[column]}.weight",), transforms)
            for name, pair in _NORMS.items()
        ]
        specs += [
            WeightSpec(dst + name, Role.LINEAR, tuple(f"{src}{s}.weight" for s in sources))
            for name, sources in linear.items()
        ]
    specs.append(WeightSpec("norm.weight", Role.VECTOR, (top["norm"],), transforms))
    if not cfg.tie_word_embeddings:
        specs.append(WeightSpec("lm_head", Role.LINEAR, (top["lm_head"],)))
    return specs


def hf_weights(
    cfg: DecoderConfig, prefix: str = "model.", head: str = "lm_head.weight"
) -> list[WeightSpec]:
    """`prefix` and `head`: where the text model's tensors sit (language_model.model. and
    language_model.lm_head.weight in a Gemma3ForConditionalGeneration checkpoint)."""
    top = {"embed": f"{prefix}embed_tokens.weight", "norm": f"{prefix}norm.weight"}
    layers = prefix + "layers.{i}."
    return _specs(cfg, layers, {**top, "lm_head": head}, False, _plus_one)


def gguf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    top = {"embed": "token_embd.weight", "norm": "output_norm.weight", "lm_head": "output.weight"}
    return _specs(cfg, "blk.{i}.", top, True, None)
