"""Write a tiny HF Llama, Qwen2, Qwen3 or Phi-3 as a llama.cpp-style GGUF file (block-quantized
tensors; for Llama, q/k rows permuted the way llama.cpp's converter does, which it does not for
the others; Phi-3's LongRoPE factors as rope_factors_{short,long} tensors; llama3 and YaRN
scaling as tiny_gguf_rope writes them), so the GGUF path can be checked against HF transformers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as GT
from gguf.quants import quantize

from mlcx.bench.workloads.random_models import LlamaShape, llama_writer
from mlcx.quantization.block_formats import BlockFormat
from mlcx.quantization.ggml_blocks import KIND_OF, encode_blocks
from tests.support.tiny_gguf_rope import write_rope_scaling

# tensor-name suffix -> GGUF type; everything 1-D stays F32
DEFAULT_TYPES = {
    "token_embd.weight": GT.Q8_0,
    "attn_q.weight": GT.Q4_0,
    "attn_k.weight": GT.Q4_1,
    "attn_v.weight": GT.Q8_0,
    "attn_output.weight": GT.Q4_1,
    "ffn_gate.weight": GT.Q4_1,
    "ffn_up.weight": GT.Q4_1,
    "ffn_down.weight": GT.Q8_0,
    "output.weight": GT.F16,
}
HF_TO_GGUF = {
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.o_proj.bias": "attn_output.bias",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "self_attn.qkv_proj.weight": "attn_qkv.weight",  # phi3: fused, kept as is
    "mlp.gate_up_proj.weight": "ffn_up.weight",
}
# the pre-tokenizer name written for each architecture (llama.cpp's converter writes qwen2's)
PRE_TOKENIZER = {
    "llama": "default",
    "qwen2": "qwen2",
    "qwen3": "qwen2",
    "phi3": "default",
    "gemma3_text": "default",
}
# llama.cpp's names where an architecture's differ from Llama's
ARCH_NAMES = {
    "gemma3_text": {
        "post_attention_layernorm.weight": "post_attention_norm.weight",
        "pre_feedforward_layernorm.weight": "ffn_norm.weight",
        "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    }
}
GGUF_ARCH = {"gemma3_text": "gemma3"}


def _llama_cpp_permute(w: np.ndarray, heads: int) -> np.ndarray:
    return (
        w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
    )


def _explicit_head_dim(cfg) -> int | None:
    head_dim = getattr(cfg, "head_dim", None)
    return head_dim if head_dim != cfg.hidden_size // cfg.num_attention_heads else None


def _rotary_dim(cfg) -> int | None:
    """llama.cpp's rope.dimension_count where RoPE turns part of each head (Phi-4-mini):
    int(partial_rotary_factor x hidden) // heads, as its converter computes it."""
    partial = cfg.rope_parameters.get("partial_rotary_factor", 1.0)
    return None if partial == 1.0 else int(partial * cfg.hidden_size) // cfg.num_attention_heads


def _gguf_name(hf_name: str, arch: str) -> str:
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    _, _, layer, rest = hf_name.split(".", 3)
    return f"blk.{layer}.{ARCH_NAMES.get(arch, {}).get(rest) or HF_TO_GGUF[rest]}"


def _add_tensor(writer, name: str, data: np.ndarray, types: dict) -> None:
    gtype = next((t for suffix, t in types.items() if name.endswith(suffix)), GT.F32)
    if data.ndim == 1 or gtype == GT.F32:
        writer.add_tensor(name, data.astype(np.float32))
    elif gtype == GT.F16:
        writer.add_tensor(name, data.astype(np.float16))
    else:
        writer.add_tensor(name, _blocks(data.astype(np.float32), gtype), raw_dtype=gtype)


def _blocks(data: np.ndarray, gtype: GT) -> np.ndarray:
    """The GGUF blocks of `data`: gguf's own quantizer where it has one, else round-to-nearest
    codes and scales written as ggml lays them out (a valid file either way; readers dequantize
    it with gguf, the reference)."""
    try:
        return quantize(data, gtype)
    except NotImplementedError:
        codes, planes = BlockFormat(KIND_OF[gtype]).parts(BlockFormat(KIND_OF[gtype]).pack(data))
        return encode_blocks(codes, planes, gtype)


def _tokenizer(writer, folder: Path, pre: str) -> None:
    spec = json.loads((folder / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    specials = {t["content"] for t in spec["added_tokens"]}
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in specials else 1 for t in tokens])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab["<|endoftext|>"])
    writer.add_eos_token_id(vocab["<|im_end|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(
        json.loads((folder / "tokenizer_config.json").read_text())["chat_template"]
    )


def _phi3_extras(writer, cfg) -> None:
    """llama.cpp's converter: the pretraining length and cos/sin scale as metadata, the LongRoPE
    factors as f32 tensors."""
    if cfg.sliding_window:
        writer.add_sliding_window(cfg.sliding_window)
    params = cfg.rope_parameters
    if params.get("rope_type") != "longrope":
        return
    original = cfg.original_max_position_embeddings
    writer.add_rope_scaling_orig_ctx_len(original)
    factor = cfg.max_position_embeddings / original
    writer.add_rope_scaling_attn_factors(
        float(params.get("attention_factor") or np.sqrt(1 + np.log(factor) / np.log(original)))
    )
    for kind in ("long", "short"):
        writer.add_tensor(f"rope_factors_{kind}.weight", np.array(params[f"{kind}_factor"], "f4"))


def _gemma3_extras(writer, cfg) -> None:
    writer.add_sliding_window(cfg.sliding_window)
    writer.add_sliding_window_pattern([kind == "sliding_attention" for kind in cfg.layer_types])
    writer.add_rope_freq_base_swa(float(cfg.rope_parameters["sliding_attention"]["rope_theta"]))
    if cfg.final_logit_softcapping:
        writer.add_final_logit_softcapping(cfg.final_logit_softcapping)


def _rope_theta(cfg) -> float:
    params = cfg.rope_parameters
    return float(params.get("full_attention", params)["rope_theta"])


def _converted(arch: str, name: str, data: np.ndarray) -> np.ndarray:
    """llama.cpp's converter stores Gemma's RMSNorm weights as 1 + w."""
    return data + 1 if arch == "gemma3_text" and name.endswith("norm.weight") else data


EXTRAS = {"phi3": _phi3_extras, "gemma3_text": _gemma3_extras}


def write_tiny_gguf(folder: Path, out: Path, types: dict = DEFAULT_TYPES) -> Path:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    cfg = model.config
    shape = LlamaShape(
        hidden=cfg.hidden_size,
        intermediate=cfg.intermediate_size,
        layers=cfg.num_hidden_layers,
        heads=cfg.num_attention_heads,
        kv_heads=cfg.num_key_value_heads,
        vocab=cfg.vocab_size,
        rope_theta=_rope_theta(cfg),
        context=cfg.max_position_embeddings,
        rms_eps=cfg.rms_norm_eps,
        key_length=_explicit_head_dim(cfg),
        rotary_dim=_rotary_dim(cfg),
    )
    arch = cfg.model_type
    writer = llama_writer(shape, out, GGUF_ARCH.get(arch, arch))
    _tokenizer(writer, folder, PRE_TOKENIZER[arch])
    if arch in EXTRAS:
        EXTRAS[arch](writer, cfg)
    write_rope_scaling(writer, cfg)
    permuted = arch == "llama"
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        data = tensor.numpy()
        # llama.cpp's converter reorders the q/k biases with their rows
        if permuted and name.endswith(("q_proj.weight", "q_proj.bias")):
            data = _llama_cpp_permute(data, cfg.num_attention_heads)
        elif permuted and name.endswith(("k_proj.weight", "k_proj.bias")):
            data = _llama_cpp_permute(data, cfg.num_key_value_heads)
        _add_tensor(writer, _gguf_name(name, arch), _converted(arch, name, data), types)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
