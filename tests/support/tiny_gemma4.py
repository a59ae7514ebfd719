"""Tiny random Gemma 4 text models (transformers' Gemma4ForCausalLM) with everything its text
model adds to Gemma 3 switched on: per-layer inputs, KV-shared layers, global layers with wider
heads, fewer kv heads and proportional RoPE, keys as values, doubled MLPs in the shared layers,
experts beside the MLP; and a dense one with those switches off.

Six layers (local, local, global, local, local, global); in the first, the last two read the
pages of layers 3 and 2: four page tensors, of two geometries. A 16-token window, shorter than
the prompts the tests feed.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.tiny_models import TinySpec, edited_copy

WINDOW = 16
KINDS = ["sliding_attention", "sliding_attention", "full_attention"] * 2
_COMMON = {
    "head_dim": 16,
    "global_head_dim": 32,
    "sliding_window": WINDOW,
    "layer_types": KINDS,
    "num_kv_shared_layers": 2,
    "final_logit_softcapping": 30.0,
}
EVERYTHING = TinySpec(
    arch="gemma4",
    layers=6,
    tie=True,
    seed=141,
    extra={
        **_COMMON,
        "num_global_key_value_heads": 1,
        "attention_k_eq_v": True,
        "use_double_wide_mlp": True,
        "hidden_size_per_layer_input": 8,
        "enable_moe_block": True,
        "num_experts": 4,
        "top_k_experts": 2,
        "moe_intermediate_size": 32,
    },
)
# as Gemma 4 31B: no experts, per-layer inputs, shared layers, keys as values or doubled MLPs
# (transformers 5.24 cannot run shared layers without per-layer inputs: its prefill slices
# the per-layer inputs it does not have); an untied head
DENSE = TinySpec(
    arch="gemma4",
    layers=6,
    seed=142,
    extra={**_COMMON, "hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0},
)
SPECS = {"everything": EVERYTHING, "dense": DENSE}


def sharpen_gemma4(src: Path, dst: Path, seed: int) -> Path:
    """A copy with unit-scale norms (Gemma 4's weigh by w, not 1 + w), router scales near one
    and a scalar per layer. The q/k norms are halved: with Gemma 4's unit attention scale,
    unit q/k norms make the tiny model's attention so peaked that float32 rounding in
    transformers itself moves its logits by ~1e-4 against float64."""
    import torch

    def edit(model, gen) -> None:
        for name, param in model.named_parameters():
            if name.endswith(("norm.weight", "router.scale", "per_expert_scale")):
                param.copy_(1.0 + 0.1 * torch.randn(param.shape, generator=gen))
            if name.endswith(("q_norm.weight", "k_norm.weight")):
                param.mul_(0.5)
        for i, layer in enumerate(model.model.layers):
            layer.layer_scalar.fill_(0.6 + 0.05 * i)

    return edited_copy(src, dst, seed, edit)
