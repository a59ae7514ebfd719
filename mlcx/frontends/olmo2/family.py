"""OLMo 2 / OLMo 3: RMSNorms after attention and after the MLP (before each residual add, none
before), q/k RMSNorm over all heads; OLMo 3 windows three of every four layers."""

from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.rules.hf import refuse
from mlcx.frontends.rules.layers import (
    gguf_layer_types,
    gguf_local_rope,
    gguf_window,
    hf_layer_types,
    hf_local_rope,
    hf_window,
)

EVERY = 4  # OLMo 3: every 4th layer global


FAMILY = Family(
    "olmo2",
    ("Olmo2ForCausalLM", "olmo2", "Olmo3ForCausalLM", "olmo3"),
    "OLMo 2 / OLMo 3 (norms after attention and MLP, q/k norms over all heads; OLMo 3's "
    "sliding-window layers)",
    options={"norm_layout": "post", "qk_norm": True, "qk_norm_scope": "all"},
    hf=HFSide(
        rules=(hf_window(), hf_layer_types(EVERY), hf_local_rope()),
        checks=(refuse("attention_bias", "the released OLMo models have none"),),
    ),
    gguf=GGUFSide(
        "olmo2", (gguf_window, gguf_layer_types(EVERY), gguf_local_rope()), default_rms_eps=1e-6
    ),
)
