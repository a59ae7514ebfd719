"""Config parsing and weight names shared by the Llama-family checkpoints (Llama, Mistral,
Qwen2, Qwen3).

These architectures store the same tensors under the same Hugging Face names; each
architecture's own folder decides what differs (biases, q/k norms, sliding window, GGUF
support).
"""

from __future__ import annotations

from typing import Any

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.hf_config import HFConfigReader
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.schemes import Role


def decoder_config_from_hf(
    config: dict[str, Any],
    arch: str,
    qkv_bias: bool,
    tie_default: bool = False,
    qk_norm: bool = False,
    o_bias: bool = False,
) -> DecoderConfig:
    r = HFConfigReader(config, arch)
    hidden = r.get("hidden_size", "n_embd", "d_model", required=True)
    heads = r.get("num_attention_heads", "n_head", required=True)
    theta, scaling = r.rope()
    head_dim = r.get("head_dim", default=hidden // heads)
    return DecoderConfig(
        vocab_size=r.get("vocab_size", required=True),
        hidden_size=hidden,
        intermediate_size=r.get("intermediate_size", "n_inner", required=True),
        num_layers=r.get("num_hidden_layers", "n_layer", required=True),
        num_heads=heads,
        num_kv_heads=r.get("num_key_value_heads", default=heads),
        head_dim=head_dim,
        context_window=r.get(
            "max_position_embeddings", "max_sequence_length", "n_positions", required=True
        ),
        rms_norm_eps=float(r.get("rms_norm_eps", "layer_norm_epsilon", default=1e-6)),
        rope_theta=theta,
        rope_scaling=scaling,
        rotary_dim=r.rotary_dim(head_dim),
        tie_word_embeddings=bool(r.get("tie_word_embeddings", default=tie_default)),
        qkv_bias=qkv_bias,
        qk_norm=qk_norm,
        o_bias=o_bias,
    )


def hf_weights(cfg: DecoderConfig, prefix: str = "model.") -> list[WeightSpec]:
    """`prefix`: where the text model's tensors sit (model.text_model. in Idefics3)."""
    specs = [WeightSpec("embed", Role.EMBEDDING, (f"{prefix}embed_tokens.weight",))]
    for i in range(cfg.num_layers):
        src, dst = f"{prefix}layers.{i}.", f"layers.{i}."
        attn = src + "self_attn."
        specs += [
            WeightSpec(dst + "input_norm.weight", Role.VECTOR, (src + "input_layernorm.weight",)),
            WeightSpec(
                dst + "attn.qkv", Role.LINEAR, tuple(f"{attn}{p}_proj.weight" for p in "qkv")
            ),
            WeightSpec(dst + "attn.o", Role.LINEAR, (attn + "o_proj.weight",)),
            WeightSpec(
                dst + "post_attn_norm.weight",
                Role.VECTOR,
                (src + "post_attention_layernorm.weight",),
            ),
            WeightSpec(
                dst + "mlp.gate_up",
                Role.LINEAR,
                (src + "mlp.gate_proj.weight", src + "mlp.up_proj.weight"),
            ),
            WeightSpec(dst + "mlp.down", Role.LINEAR, (src + "mlp.down_proj.weight",)),
        ]
        if cfg.qkv_bias:
            specs.append(
                WeightSpec(
                    dst + "attn.qkv.bias", Role.VECTOR, tuple(f"{attn}{p}_proj.bias" for p in "qkv")
                )
            )
        if cfg.o_bias:
            specs.append(WeightSpec(dst + "attn.o.bias", Role.VECTOR, (attn + "o_proj.bias",)))
        if cfg.qk_norm:
            specs += [
                WeightSpec(f"{dst}attn.{p}_norm.weight", Role.VECTOR, (f"{attn}{p}_norm.weight",))
                for p in "qk"
            ]
    specs.append(WeightSpec("norm.weight", Role.VECTOR, (f"{prefix}norm.weight",)))
    if not cfg.tie_word_embeddings:
        specs.append(WeightSpec("lm_head", Role.LINEAR, ("lm_head.weight",)))
    return specs
