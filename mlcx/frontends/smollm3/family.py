"""SmolLM3: Llama's decoder with no RoPE in every 4th layer (NoPE)."""

from dataclasses import replace

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.hf import refuse, tie_default
from mlcx.frontends.weight_names import GGUF

INTERVAL = 4  # transformers' and llama.cpp's default: every 4th layer has no RoPE


def _hf_nope(r, cfg):
    """`no_rope_layers`: 1 where a layer uses RoPE, 0 where not."""
    uses = r.config.get("no_rope_layers")
    if uses is None:
        every = int(r.config.get("no_rope_layer_interval") or INTERVAL)
        return {"nope_layers": tuple(i for i in range(cfg.num_layers) if (i + 1) % every == 0)}
    return {"nope_layers": tuple(i for i, rope in enumerate(uses) if not rope)}


def _gguf_nope(ckpt, cfg):
    """llama.cpp writes no key for it: every 4th layer, as its smollm3 graph does."""
    return {"nope_layers": tuple(i for i in range(cfg.num_layers) if (i + 1) % INTERVAL == 0)}


FAMILY = Family(
    "smollm3",
    ("SmolLM3ForCausalLM", "smollm3"),
    "SmolLM3 (no RoPE in every 4th layer)",
    hf=HFSide(
        rules=(tie_default(True), _hf_nope),
        checks=(
            refuse("use_sliding_window", "the released SmolLM3 models do not use it"),
            refuse("attention_bias", "the released SmolLM3 models have none"),
        ),
    ),
    gguf=GGUFSide("smollm3", (_gguf_nope,), replace(GGUF, rope_permuted=True), 1e-6),
)
