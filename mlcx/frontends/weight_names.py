"""Where a checkpoint keeps each weight of the shared decoder: a table from the decoder's source
slots to tensor names, one for Hugging Face folders and one for GGUF files.

Slots name what the decoder reads, not mlcx's parameters: `q`, `k`, `v` (or `qkv`, one fused
tensor), `gate`, `up` (or `gate_up`), `expert_gate` ... A template's `{i}` is the layer, `{e}`
the expert; an expert template without `{e}` is one tensor stacked over experts (llama.cpp's
`ffn_*_exps`). A family declares its table as the Llama table with what differs
(`LLAMA_HF.with_names(...)`); decoder_weights assembles the WeightSpecs from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from mlcx.frontends.weight_spec import RowTransform

_LAYER = "model.layers.{i}."


@dataclass(frozen=True)
class WeightNames:
    names: Mapping[str, str]
    # applied to the rows of every norm weight (Gemma's (1 + w) norms stored as w)
    norm_transform: RowTransform | None = None
    # llama.cpp's converter reordered q/k rows for its interleaved RoPE (llama, mixtral)
    rope_permuted: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", MappingProxyType(dict(self.names)))

    def has(self, slot: str) -> bool:
        return slot in self.names

    def name(self, slot: str, layer: int = 0, expert: int = 0) -> str:
        if not self.has(slot):
            raise KeyError(f"the weight table has no {slot!r} slot")
        return self.names[slot].format(i=layer, e=expert)

    def stacked(self, slot: str) -> bool:
        """Whether an expert slot is one tensor stacked over the experts."""
        return "{e}" not in self.names[slot]

    def with_names(self, **names: str) -> WeightNames:
        """This table with `names` added or replacing slots."""
        return replace(self, names={**self.names, **names})

    def without(self, *slots: str) -> WeightNames:
        return replace(self, names={s: n for s, n in self.names.items() if s not in slots})

    def prefixed(self, old: str, new: str, **names: str) -> WeightNames:
        """Every name starting with `old` moved under `new` (a text model inside a multimodal
        checkpoint), then `names` replacing slots."""
        moved = {s: new + n[len(old) :] if n.startswith(old) else n for s, n in self.names.items()}
        return replace(self, names={**moved, **names})


def _attn(proj: str) -> str:
    return f"{_LAYER}self_attn.{proj}"


LLAMA_HF = WeightNames(
    {
        "embed": "model.embed_tokens.weight",
        "norm": "model.norm.weight",
        "lm_head": "lm_head.weight",
        "attn_norm": _LAYER + "input_layernorm.weight",
        **{p: _attn(f"{p}_proj.weight") for p in "qkvo"},
        **{f"{p}_bias": _attn(f"{p}_proj.bias") for p in "qkvo"},
        "q_norm": _attn("q_norm.weight"),
        "k_norm": _attn("k_norm.weight"),
        "sinks": _attn("sinks"),
        "attn_post_norm": _LAYER + "post_attention_layernorm.weight",
        "mlp_norm": _LAYER + "post_attention_layernorm.weight",
        "mlp_post_norm": _LAYER + "post_feedforward_layernorm.weight",
        **{p: f"{_LAYER}mlp.{p}_proj.weight" for p in ("gate", "up", "down")},
        "router": _LAYER + "mlp.gate.weight",
        **{
            f"expert_{p}": f"{_LAYER}mlp.experts.{{e}}.{p}_proj.weight"
            for p in ("gate", "up", "down")
        },
    }
)

# llama.cpp names every architecture's tensors alike (its LLM_TENSOR table)
GGUF = WeightNames(
    {
        "embed": "token_embd.weight",
        "norm": "output_norm.weight",
        "lm_head": "output.weight",
        "attn_norm": "blk.{i}.attn_norm.weight",
        **{p: f"blk.{{i}}.attn_{p}.weight" for p in "qkv"},
        "o": "blk.{i}.attn_output.weight",
        **{f"{p}_bias": f"blk.{{i}}.attn_{p}.bias" for p in "qkv"},
        "o_bias": "blk.{i}.attn_output.bias",
        "q_norm": "blk.{i}.attn_q_norm.weight",
        "k_norm": "blk.{i}.attn_k_norm.weight",
        "sinks": "blk.{i}.attn_sinks.weight",
        "attn_post_norm": "blk.{i}.post_attention_norm.weight",
        "mlp_norm": "blk.{i}.ffn_norm.weight",
        "mlp_post_norm": "blk.{i}.post_ffw_norm.weight",
        **{p: f"blk.{{i}}.ffn_{p}.weight" for p in ("gate", "up", "down")},
        "router": "blk.{i}.ffn_gate_inp.weight",
        "router_bias": "blk.{i}.ffn_gate_inp.bias",
        **{f"expert_{p}": f"blk.{{i}}.ffn_{p}_exps.weight" for p in ("gate", "up", "down")},
        **{f"expert_{p}_bias": f"blk.{{i}}.ffn_{p}_exps.bias" for p in ("gate", "up", "down")},
        # hybrid models' state layers (mlcx.frontends.state_weights) and shared experts
        "delta_qkv": "blk.{i}.attn_qkv.weight",
        "delta_z": "blk.{i}.attn_gate.weight",
        "delta_b": "blk.{i}.ssm_beta.weight",
        "delta_a": "blk.{i}.ssm_alpha.weight",
        "delta_conv": "blk.{i}.ssm_conv1d.weight",
        "delta_dt_bias": "blk.{i}.ssm_dt.bias",
        "delta_decay": "blk.{i}.ssm_a",
        "delta_norm": "blk.{i}.ssm_norm.weight",
        "delta_out": "blk.{i}.ssm_out.weight",
        **{f"conv_{p}": f"blk.{{i}}.shortconv.{p}_proj.weight" for p in ("in", "out")},
        "conv_taps": "blk.{i}.shortconv.conv.weight",
        **{f"shared_{p}": f"blk.{{i}}.ffn_{p}_shexp.weight" for p in ("gate", "up", "down")},
        "shared_router": "blk.{i}.ffn_gate_inp_shexp.weight",
        # Gemma 4's: experts beside the dense MLP, per-layer inputs, output scalars
        "dense_post_norm": "blk.{i}.post_ffw_norm_1.weight",
        "moe_norm": "blk.{i}.pre_ffw_norm_2.weight",
        "moe_post_norm": "blk.{i}.post_ffw_norm_2.weight",
        "router_scale": "blk.{i}.ffn_gate_inp.scale",
        "expert_scale": "blk.{i}.ffn_down_exps.scale",
        "ple_embed": "per_layer_token_embd.weight",
        "ple_proj": "per_layer_model_proj.weight",
        "ple_norm": "per_layer_proj_norm.weight",
        "ple_gate": "blk.{i}.inp_gate.weight",
        "ple_out": "blk.{i}.proj.weight",
        "ple_post_norm": "blk.{i}.post_norm.weight",
        "layer_scalar": "blk.{i}.layer_output_scale.weight",
    }
)
