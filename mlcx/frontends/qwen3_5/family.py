"""Qwen3.5: three Gated DeltaNet layers before each full-attention layer (a hybrid: the state
layers keep a conv window and a recurrent matrix per sequence), attention gated per head by a
sigmoid of a second half of q, q/k RMSNorms, RoPE over a quarter of each head, (1 + w) RMSNorms
stored as w (llama.cpp's converter stored 1 + w; the delta rule's output norm is a plain w).

Text positions make Qwen3.5's multimodal RoPE (mrope sections) the plain RoPE. Checkpoints
carry a multi-token-prediction layer (`mtp.*`; in GGUF the blocks past the trunk): mlcx reads
the trunk and leaves it out (speculative decoding is refused for hybrid models)."""

from dataclasses import replace

import numpy as np

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.hf import refuse
from mlcx.frontends.rules.hybrid import gguf_delta_layers, hf_delta_layers
from mlcx.frontends.weight_names import GGUF, LLAMA_HF

_LINEAR = "model.layers.{i}.linear_attn."


def plus_one(rows: np.ndarray) -> np.ndarray:
    return rows + np.asarray(1, rows.dtype)


HF_NAMES = replace(
    LLAMA_HF.with_names(
        **{f"delta_{p}": f"{_LINEAR}in_proj_{p}.weight" for p in ("qkv", "z", "b", "a")},
        delta_conv=_LINEAR + "conv1d.weight",
        delta_dt_bias=_LINEAR + "dt_bias",
        delta_a_log=_LINEAR + "A_log",
        delta_norm=_LINEAR + "norm.weight",
        delta_out=_LINEAR + "out_proj.weight",
    ),
    norm_transform=plus_one,
)
GGUF_NAMES = GGUF.with_names(mlp_norm="blk.{i}.post_attention_norm.weight")
OPTIONS = {"qk_norm": True}
CHECKS = (refuse("attention_bias", "the released Qwen3.5 models have none"),)

FAMILY = Family(
    "qwen3_5",
    ("Qwen3_5ForCausalLM", "qwen3_5_text"),
    "Qwen3.5 (hybrid: Gated DeltaNet layers and gated attention, partial RoPE, (1 + w) norms; "
    "the MTP layer is not run)",
    options=OPTIONS,
    hf=HFSide(HF_NAMES, (hf_delta_layers,), CHECKS),
    gguf=GGUFSide("qwen35", (gguf_delta_layers,), GGUF_NAMES, default_rms_eps=1e-6),
)
