"""Gemma 4 text: Gemma 3's sandwich norms, GeGLU, q/k norms and local/global layers, with plain
RMSNorm weights (no 1 + w), values RMS-normed too, unit attention scale (the q/k norms do it),
and per-layer options (mlcx.frontends.gemma4.layers): global layers with their own head width,
kv heads and proportional RoPE, keys as values there (attention_k_eq_v), the last layers
attending over an earlier layer's pages (num_kv_shared_layers) with doubled MLPs
(use_double_wide_mlp), per-layer inputs (hidden_size_per_layer_input), a learned scalar on each
layer's output, and experts beside the dense MLP (enable_moe_block).

Gemma4ForConditionalGeneration's vision and audio towers are not SigLIP's (2D RoPE, pooling,
clipped linears): mlcx reads the text model of Gemma4ForCausalLM folders, of GGUF files and of
Gemma4ForConditionalGeneration folders (mlcx.frontends.gemma4_multimodal).
"""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.gemma4 import layers
from mlcx.frontends.gemma4.tensors import gemma4_tensors
from mlcx.frontends.rules import gguf
from mlcx.frontends.rules.common import embed_scale_sqrt
from mlcx.frontends.rules.experts import gguf_experts
from mlcx.frontends.rules.hf import activation, flag, softcaps, tie_default
from mlcx.frontends.rules.layers import (
    gguf_layer_types,
    gguf_local_rope,
    gguf_window,
    hf_layer_types,
    hf_local_rope,
    hf_window,
)
from mlcx.frontends.weight_names import GGUF, LLAMA_HF

EVERY = 6  # every 6th layer global, the others local (transformers' default)
LOCAL_THETA = 10000.0
_L = "model.layers.{i}."

HF_NAMES = LLAMA_HF.with_names(
    mlp_norm=_L + "pre_feedforward_layernorm.weight",
    dense_post_norm=_L + "post_feedforward_layernorm_1.weight",
    moe_norm=_L + "pre_feedforward_layernorm_2.weight",
    moe_post_norm=_L + "post_feedforward_layernorm_2.weight",
    router=_L + "router.proj.weight",
    router_scale=_L + "router.scale",
    expert_scale=_L + "router.per_expert_scale",
    expert_gate_up=_L + "experts.gate_up_proj",  # [experts, 2 x width, hidden]
    expert_down=_L + "experts.down_proj",
    ple_embed="model.embed_tokens_per_layer.weight",
    ple_proj="model.per_layer_model_projection.weight",
    ple_norm="model.per_layer_projection_norm.weight",
    ple_gate=_L + "per_layer_input_gate.weight",
    ple_out=_L + "per_layer_projection.weight",
    ple_post_norm=_L + "post_per_layer_input_norm.weight",
    layer_scalar=_L + "layer_scalar",
).without("expert_gate", "expert_up")


def _gguf_experts(ckpt, cfg):
    if int(ckpt.arch_meta("expert_count", 0)) < 1:
        return {}
    # llama.cpp's gemma4 graph renormalizes the top-k weights
    rule = gguf_experts("expert_feed_forward_length", renormalize=True, gate="ffn_gate_up_exps")
    return {**rule(ckpt, cfg), "moe_dense_mlp": True}


FAMILY = Family(
    "gemma4",
    ("Gemma4ForCausalLM", "gemma4_text"),
    "Gemma 4 text (per-layer inputs, KV-shared layers, wider global heads with proportional "
    "RoPE, keys as values, experts beside the MLP, final logit soft-capping)",
    options={
        "qk_norm": True,
        "norm_layout": "sandwich",
        "hidden_act": "gelu_tanh",  # llama.cpp's gemma4 graph; config.json's is read too
        "v_norm": True,
        "layer_scalar": True,
        "attn_scale": 1.0,
    },
    hf=HFSide(
        HF_NAMES,
        (
            activation("hidden_activation", "hidden_act", default="gelu_pytorch_tanh"),
            tie_default(True),
            flag("attention_bias", "qkv_bias", "o_bias"),
            hf_window(),
            hf_layer_types(EVERY),
            hf_local_rope(LOCAL_THETA),
            softcaps("final_logit_softcapping"),
            embed_scale_sqrt,
            layers.hf_layers,
            layers.hf_experts,
        ),
        checks=(layers.hf_checks,),
        view=gemma4_tensors,
    ),
    gguf=GGUFSide(
        "gemma4",
        (
            gguf_window,
            gguf_layer_types(EVERY),
            gguf_local_rope(LOCAL_THETA),
            gguf.softcaps,
            gguf.biases_from_tensors,
            embed_scale_sqrt,
            layers.gguf_layers,
            _gguf_experts,
        ),
        GGUF.with_names(expert_gate_up="blk.{i}.ffn_gate_up_exps.weight"),
        default_rms_eps=1e-6,
        experts=None,  # dense and mixture-of-experts files are both `gemma4`
    ),
)
