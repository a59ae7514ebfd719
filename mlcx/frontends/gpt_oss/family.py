"""gpt-oss (20b, 120b): attention with q/k/v/o biases and a learned sink logit per head,
windowed (128) and full layers alternating, YaRN RoPE; then a mixture of experts whose router
has a bias and takes the top k logits before a softmax over them, with biases on every
expert's rows and the clamped SwiGLU (up + 1) * g * sigmoid(1.702 g), g = min(gate, 7), up
clipped to +-7 (mlcx.kernels.moe_options.GPT_OSS). Experts are MXFP4 in the released
checkpoints and in llama.cpp's files; mlcx keeps their bytes whatever the scheme.

YaRN's ramp: transformers' GptOssConfig and OpenAI's reference leave its ends unrounded
(`truncate: false`); llama.cpp's files do not say, and llama.cpp rounds them, so a GGUF is read
as the model was trained (its config's truncate), not as llama.cpp runs it."""

from mlcx.errors import UnsupportedModelError
from mlcx.frontends.family import Family, GGUFSide, HFSide
from mlcx.frontends.gpt_oss.tensors import EXPERTS, gpt_oss_tensors
from mlcx.frontends.rules.experts import gguf_experts, hf_experts
from mlcx.frontends.rules.gguf import biases_from_tensors
from mlcx.frontends.rules.hf import flag
from mlcx.frontends.rules.layers import gguf_layer_types, gguf_window, hf_layer_types, hf_window
from mlcx.frontends.weight_names import GGUF, LLAMA_HF
from mlcx.kernels.moe_options import GPT_OSS_GLU

EVERY = 2  # every other layer full, the others windowed (layer 0 windowed)
_MLP = "model.layers.{i}.mlp."
OPTIONS = {
    "attn_sinks": True,
    "router_bias": True,
    "topk_softmax": True,
    "expert_bias": True,
    "glu_alpha": GPT_OSS_GLU.alpha,
    "glu_limit": GPT_OSS_GLU.limit,
    "glu_up_shift": GPT_OSS_GLU.up_shift,  # the (up + 1) of gpt-oss's activation
}


def _hf_quantized(r) -> None:
    """MXFP4 (the released checkpoints) is read as it is; other quantizations are not."""
    method = (r.config.get("quantization_config") or {}).get("quant_method")
    if method not in (None, "mxfp4"):
        raise UnsupportedModelError(
            f"{r.arch}: quantization_config quant_method {method!r} is not supported; mlcx "
            "reads gpt-oss checkpoints in MXFP4 (as released) or unquantized"
        )


def _hf_glu(r, cfg):
    """The clamp and gain of the SwiGLU, as config.json gives them."""
    limit = float(r.get("swiglu_limit", default=GPT_OSS_GLU.limit))
    return {
        "glu_alpha": float(r.get("swiglu_alpha", default=GPT_OSS_GLU.alpha)),
        "glu_limit": limit,
    }


def _gguf_yarn(ckpt, cfg):
    """gpt-oss's YaRN ramp is unrounded (see the module doc)."""
    if cfg.rope_scaling.get("rope_type") != "yarn":
        return {}
    return {"rope_scaling": {**cfg.rope_scaling, "truncate": False}}


FAMILY = Family(
    "gpt_oss",
    ("GptOssForCausalLM", "gpt_oss"),
    "gpt-oss (attention sinks, alternating windowed and full layers, biased router taking the "
    "top k before its softmax, biased experts with the clamped SwiGLU; MXFP4 experts kept)",
    options=OPTIONS,
    hf=HFSide(
        LLAMA_HF.with_names(
            router=_MLP + "router.weight",
            router_bias=_MLP + "router.bias",
            **{f"expert_{p}": f"{EXPERTS}{p}_proj.weight" for p in ("gate", "up", "down")},
            **{f"expert_{p}_bias": f"{EXPERTS}{p}_proj.bias" for p in ("gate", "up", "down")},
        ),
        (
            flag("attention_bias", "qkv_bias", "o_bias"),
            hf_window(),
            hf_layer_types(EVERY),
            hf_experts("intermediate_size", renormalize=False),
            _hf_glu,
        ),
        (_hf_quantized,),
        view=gpt_oss_tensors,
    ),
    # llama.cpp's gpt-oss graph: the pre-MoE norm is `post_attention_norm`; top-k then softmax
    gguf=GGUFSide(
        "gpt-oss",
        (
            biases_from_tensors,
            gguf_window,
            gguf_layer_types(EVERY),
            gguf_experts("expert_feed_forward_length", renormalize=False),
            _gguf_yarn,
        ),
        GGUF.with_names(mlp_norm="blk.{i}.post_attention_norm.weight"),
        experts=True,
    ),
)
