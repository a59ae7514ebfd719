"""Mixtral: Mistral's attention, then a top-k mixture of SwiGLU experts (w1/w3/w2)."""

from dataclasses import replace

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.experts import gguf_experts, hf_experts, no_shared_experts
from mlcx.frontends.rules.layers import hf_window
from mlcx.frontends.weight_names import GGUF, LLAMA_HF

_MOE = "model.layers.{i}.block_sparse_moe."

FAMILY = Family(
    "mixtral",
    ("MixtralForCausalLM", "mixtral"),
    "Mixtral (Mistral's attention, experts `w1`/`w3`/`w2`, top-k weights always renormalized)",
    hf=HFSide(
        LLAMA_HF.with_names(
            router=_MOE + "gate.weight",
            expert_gate=_MOE + "experts.{e}.w1.weight",
            expert_up=_MOE + "experts.{e}.w3.weight",
            expert_down=_MOE + "experts.{e}.w2.weight",
        ),
        (hf_window(), hf_experts("intermediate_size", renormalize=True)),
        (no_shared_experts,),
    ),
    # llama.cpp writes Mixtral as `llama` with stacked `ffn_*_exps`, q/k rows as for Llama
    gguf=GGUFSide(
        "llama",
        (gguf_experts("feed_forward_length", renormalize=True),),
        replace(GGUF, rope_permuted=True),
        experts=True,
    ),
)
