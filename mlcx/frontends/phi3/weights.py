"""Where Phi-3's weights live: fused q/k/v rows and fused gate/up rows, in a Hugging Face
checkpoint (`qkv_proj`, `gate_up_proj`) and in a llama.cpp GGUF file (`attn_qkv`, `ffn_up`).

mlcx's layers take the same fused layouts (q, k, v rows; gate rows, then up rows), so each
fused tensor maps to one weight as it is."""

from __future__ import annotations

from mlcx.frontends.decoder_config import DecoderConfig
from mlcx.frontends.weight_spec import WeightSpec
from mlcx.quantization.schemes import Role

_HF = {
    "embed": "model.embed_tokens.weight",
    "norm": "model.norm.weight",
    "lm_head": "lm_head.weight",
    "input_norm": "model.layers.{i}.input_layernorm.weight",
    "qkv": "model.layers.{i}.self_attn.qkv_proj.weight",
    "o": "model.layers.{i}.self_attn.o_proj.weight",
    "post_attn_norm": "model.layers.{i}.post_attention_layernorm.weight",
    "gate_up": "model.layers.{i}.mlp.gate_up_proj.weight",
    "down": "model.layers.{i}.mlp.down_proj.weight",
}
_GGUF = {
    "embed": "token_embd.weight",
    "norm": "output_norm.weight",
    "lm_head": "output.weight",
    "input_norm": "blk.{i}.attn_norm.weight",
    "qkv": "blk.{i}.attn_qkv.weight",
    "o": "blk.{i}.attn_output.weight",
    "post_attn_norm": "blk.{i}.ffn_norm.weight",
    "gate_up": "blk.{i}.ffn_up.weight",
    "down": "blk.{i}.ffn_down.weight",
}


def _specs(cfg: DecoderConfig, names: dict[str, str]) -> list[WeightSpec]:
    specs = [WeightSpec("embed", Role.EMBEDDING, (names["embed"],))]
    for i in range(cfg.num_layers):
        dst = f"layers.{i}."

        def src(key: str, i: int = i) -> tuple[str, ...]:
            return (names[key].format(i=i),)

        specs += [
            WeightSpec(dst + "input_norm.weight", Role.VECTOR, src("input_norm")),
            WeightSpec(dst + "attn.qkv", Role.LINEAR, src("qkv")),
            WeightSpec(dst + "attn.o", Role.LINEAR, src("o")),
            WeightSpec(dst + "post_attn_norm.weight", Role.VECTOR, src("post_attn_norm")),
            WeightSpec(dst + "mlp.gate_up", Role.LINEAR, src("gate_up")),
            WeightSpec(dst + "mlp.down", Role.LINEAR, src("down")),
        ]
    specs.append(WeightSpec("norm.weight", Role.VECTOR, (names["norm"],)))
    if not cfg.tie_word_embeddings:
        specs.append(WeightSpec("lm_head", Role.LINEAR, (names["lm_head"],)))
    return specs


def hf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    return _specs(cfg, _HF)


def gguf_weights(cfg: DecoderConfig) -> list[WeightSpec]:
    # llama.cpp runs phi3 with NeoX-style RoPE: its converter keeps the q/k rows as they are
    return _specs(cfg, _GGUF)
