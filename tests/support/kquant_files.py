"""Tiny Llamas as K-quant GGUF files: uniform Q4_K / Q5_K / Q6_K, and mixes shaped like
llama.cpp's Q4_K_M (Q4_K for most matrices; Q6_K for v, some down projections and the head;
Q5_0 / Q5_1 / Q8_0 in places, as its fallbacks put them), Q2_K and IQ4_XS."""

from __future__ import annotations

from pathlib import Path

from gguf import GGMLQuantizationType as GT

from tests.support.tiny_gguf import write_tiny_gguf
from tests.support.tiny_models import TinySpec

# every in_features a multiple of 256 (K-quant super-blocks)
KQUANT_SPEC = TinySpec(arch="llama", hidden=256, heads=4, kv_heads=2, intermediate=512, seed=27)
TIED_SPEC = TinySpec(
    arch="llama", hidden=256, heads=4, kv_heads=2, intermediate=512, tie=True, seed=28
)

MATRICES = (
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_qkv",  # phi3's fused projection
    "attn_output",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
)
# other architectures at K-quant shapes (head_dim 64; phi3 with its default RoPE)
ARCH_SPECS = {
    "qwen2": TinySpec(arch="qwen2", hidden=256, heads=4, intermediate=512, tie=True, seed=41),
    "qwen3": TinySpec(
        arch="qwen3", hidden=256, heads=4, intermediate=512, seed=42, extra={"head_dim": 64}
    ),
    "phi3": TinySpec(arch="phi3", hidden=256, heads=4, intermediate=512, seed=43),
}
# Gemma 3 with 256-wide rows (head_dim 64): a sliding and a global layer, a tied table
GEMMA3_SPEC = TinySpec(
    arch="gemma3",
    hidden=256,
    heads=4,
    kv_heads=2,
    intermediate=512,
    tie=True,
    seed=45,
    extra={
        "head_dim": 64,
        "query_pre_attn_scalar": 64,
        "sliding_window": 16,
        "layer_types": ["sliding_attention", "full_attention"],
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
        },
    },
)


def _uniform(gtype: GT) -> dict[str, GT]:
    types = {f"{m}.weight": gtype for m in MATRICES}
    return {"token_embd.weight": gtype, **types, "output.weight": gtype}


# tensor-name suffix -> type; the first suffix a name ends with wins (so blk.N. entries first)
Q4_K_M = {
    "blk.0.ffn_down.weight": GT.Q6_K,
    "blk.0.attn_v.weight": GT.Q6_K,
    "blk.1.attn_output.weight": GT.Q8_0,
    "blk.1.ffn_up.weight": GT.Q5_1,
    **_uniform(GT.Q4_K),
    "attn_output.weight": GT.Q5_0,
    "output.weight": GT.Q6_K,
}
MIXES: dict[str, dict[str, GT]] = {
    "q4_k": _uniform(GT.Q4_K),
    "q5_k": _uniform(GT.Q5_K),
    "q6_k": _uniform(GT.Q6_K),
    "q4_k_m": Q4_K_M,
    # tied head: llama.cpp stores the shared table as Q6_K
    "q4_k_m_tied": {**Q4_K_M, "token_embd.weight": GT.Q6_K},
}


# the low-bit and IQ4 types, mixed as llama.cpp's Q2_K and IQ4_XS files mix them (a Q3_K_M
# mix would add no kind: the Q2_K mix holds Q3_K blocks, as llama.cpp's does, and real Q3_K_M
# files are tests/models/test_llama_quantize_*.py's)
LOW_MIXES: dict[str, dict[str, GT]] = {
    "q2_k": {
        "blk.1.attn_v.weight": GT.Q3_K,
        **_uniform(GT.Q2_K),
        "ffn_down.weight": GT.Q3_K,
        "attn_output.weight": GT.Q4_K,
        "output.weight": GT.Q6_K,
    },
    "iq4_xs": {
        "blk.1.ffn_up.weight": GT.IQ4_NL,  # gate IQ4_XS, up IQ4_NL: a stacked gate/up
        **_uniform(GT.IQ4_XS),
        "attn_v.weight": GT.IQ4_NL,
        "output.weight": GT.Q6_K,
    },
}


def write_mix(folder: Path, out: Path, mix: str) -> Path:
    return write_tiny_gguf(folder, out, {**MIXES, **LOW_MIXES}[mix])
