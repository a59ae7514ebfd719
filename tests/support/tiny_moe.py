"""Tiny random mixtures of experts (Qwen3-MoE, Mixtral, OLMoE) as Hugging Face folders and as
llama.cpp-style GGUF files: experts stacked into `blk.N.ffn_{gate,up,down}_exps` [experts,
rows, in], the router as `ffn_gate_inp`, expert metadata under the file's architecture.

The GGUF is written from the safetensors file as saved (per-expert tensors, the names released
checkpoints use), not from transformers' in-memory fused layout. For block-quantized files
the reference is the HF folder with every tensor rounded through the same GGUF type (quantize,
then dequantize with the `gguf` package): blocks are per row, so stacking experts and llama.cpp's
q/k row reordering commute with that rounding.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as GT
from gguf.quants import dequantize, quantize

from mlcx.bench.workloads.random_models import LlamaShape, llama_writer
from tests.support.tiny_gguf import _gguf_name, _llama_cpp_permute, _tokenizer
from tests.support.tiny_models import TinySpec, load_reference

EXPERTS, TOP_K = 4, 2
SPECS = {
    "qwen3_moe": TinySpec(
        arch="qwen3_moe",
        seed=71,
        extra={
            "num_experts": EXPERTS,
            "num_experts_per_tok": TOP_K,
            "moe_intermediate_size": 32,
            "norm_topk_prob": True,  # as the released models and llama.cpp's qwen3moe graph
        },
    ),
    "mixtral": TinySpec(
        arch="mixtral",
        intermediate=64,
        seed=72,
        extra={"num_local_experts": EXPERTS, "num_experts_per_tok": TOP_K},
    ),
    "olmoe": TinySpec(
        arch="olmoe",
        intermediate=64,
        seed=73,
        extra={"num_experts": EXPERTS, "num_experts_per_tok": TOP_K, "norm_topk_prob": False},
    ),
}
GGUF_ARCH = {"qwen3_moe": "qwen3moe", "mixtral": "llama", "olmoe": "olmoe"}
# model_type -> the HF block holding the router and experts, and each expert's gate/up/down names
EXPERT_NAMES = {
    "qwen3_moe": ("mlp", "gate_proj", "up_proj", "down_proj"),
    "mixtral": ("block_sparse_moe", "w1", "w3", "w2"),
    "olmoe": ("mlp", "gate_proj", "up_proj", "down_proj"),
}
# GGUF name suffix -> type; gate and up of the experts differ, so mlcx keeps them as a stack
QUANT_TYPES = {
    "token_embd.weight": GT.Q8_0,
    "attn_q.weight": GT.Q4_0,
    "attn_k.weight": GT.Q8_0,
    "attn_v.weight": GT.Q4_0,
    "attn_output.weight": GT.Q8_0,
    "ffn_gate_exps.weight": GT.Q4_0,
    "ffn_up_exps.weight": GT.Q8_0,
    "ffn_down_exps.weight": GT.Q8_0,
    "output.weight": GT.Q8_0,
}
F32: dict = {}


def sharpen_moe(src: Path, dst: Path, seed: int) -> Path:
    """A copy whose routing and attention matter: unit-scale layer and final norms (the random
    ~0.08 ones shrink every layer's output until a wrong expert choice or router weighting
    moves the logits by less than the tolerance), large uneven q/k norms where the family has
    them, and a router four times larger, so the experts' probabilities are far apart."""
    import torch

    shutil.copytree(src, dst)
    model = load_reference(src)
    gen = torch.Generator().manual_seed(seed)

    def draw(shape, scale, base=0.0):
        return base + scale * torch.randn(shape, generator=gen)

    with torch.no_grad():
        model.model.norm.weight.copy_(draw(model.model.norm.weight.shape, 0.1, 1.0))
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight"):
                p.copy_(draw(p.shape, 0.1, 1.0))
            elif name.endswith(("q_norm.weight", "k_norm.weight")):
                p.copy_(draw(p.shape, 1.5))
            elif name.endswith("gate.weight"):  # the router
                p.mul_(4.0)
    model.save_pretrained(dst)
    return dst


def _tensors(folder: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(folder / "model.safetensors"))


_EXPERT = re.compile(r"model\.layers\.(\d+)\.(\w+)\.experts\.(\d+)\.(\w+)\.weight")
_ROUTER = re.compile(r"model\.layers\.(\d+)\.(\w+)\.gate\.weight")


def _gguf_type(name: str, types: dict) -> GT:
    return next((t for suffix, t in types.items() if name.endswith(suffix)), GT.F32)


def _gguf_tensors(arch: str, tensors: dict, cfg: dict) -> dict[str, np.ndarray]:
    """llama.cpp's names and layout for every tensor of the folder."""
    _, gate, up, down = EXPERT_NAMES[arch]
    kind = {gate: "gate", up: "up", down: "down"}
    out, experts = {}, {}
    for name, data in tensors.items():
        if name == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        if m := _EXPERT.fullmatch(name):
            layer, _, e, proj = m.groups()
            experts.setdefault((layer, kind[proj]), {})[int(e)] = data
        elif m := _ROUTER.fullmatch(name):
            out[f"blk.{m.group(1)}.ffn_gate_inp.weight"] = data
        else:
            if arch == "mixtral" and name.endswith(("q_proj.weight", "k_proj.weight")):
                heads = cfg["num_attention_heads" if "q_proj" in name else "num_key_value_heads"]
                data = _llama_cpp_permute(data, heads)
            out[_gguf_name(name, "llama")] = data
    for (layer, proj), per_expert in experts.items():
        out[f"blk.{layer}.ffn_{proj}_exps.weight"] = np.stack(
            [per_expert[e] for e in sorted(per_expert)]
        )
    return out


def _metadata(writer, arch: str, cfg: dict) -> None:
    writer.add_expert_count(cfg.get("num_experts") or cfg["num_local_experts"])
    writer.add_expert_used_count(cfg["num_experts_per_tok"])
    if arch == "qwen3_moe":
        writer.add_expert_feed_forward_length(cfg["moe_intermediate_size"])


def write_moe_gguf(folder: Path, out: Path, types: dict = F32) -> Path:
    cfg = json.loads((folder / "config.json").read_text())
    arch = cfg["model_type"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    shape = LlamaShape(
        hidden=cfg["hidden_size"],
        intermediate=cfg["intermediate_size"],
        layers=cfg["num_hidden_layers"],
        heads=cfg["num_attention_heads"],
        kv_heads=cfg["num_key_value_heads"],
        vocab=cfg["vocab_size"],
        rope_theta=float(cfg["rope_parameters"]["rope_theta"]),
        context=cfg["max_position_embeddings"],
        rms_eps=cfg["rms_norm_eps"],
        key_length=head_dim if arch == "qwen3_moe" else None,
    )
    writer = llama_writer(shape, out, GGUF_ARCH[arch])
    _tokenizer(writer, folder, "qwen2" if arch == "qwen3_moe" else "default")
    _metadata(writer, arch, cfg)
    for name, data in _gguf_tensors(arch, _tensors(folder), cfg).items():
        gtype = _gguf_type(name, types)
        if data.ndim == 1 or gtype == GT.F32:
            writer.add_tensor(name, data.astype(np.float32))
        else:
            writer.add_tensor(name, quantize(data.astype(np.float32), gtype), raw_dtype=gtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def rounded_folder(folder: Path, out: Path, types: dict) -> Path:
    """A copy of `folder` whose tensors went through the GGUF types `types` gives them."""
    from safetensors.numpy import save_file

    shutil.copytree(folder, out)
    tensors = _tensors(folder)
    cfg = json.loads((folder / "config.json").read_text())
    arch = cfg["model_type"]
    names = {}
    for name in tensors:
        one = _gguf_tensors(arch, {name: tensors[name]}, cfg)
        names[name] = next(iter(one), "")
    rounded = {}
    for name, data in tensors.items():
        gtype = _gguf_type(names[name], types)
        if data.ndim == 2 and gtype != GT.F32:
            data = dequantize(quantize(data.astype(np.float32), gtype), gtype).reshape(data.shape)
        rounded[name] = np.ascontiguousarray(data, dtype=np.float32)
    save_file(rounded, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


__all__ = ["SPECS", "QUANT_TYPES", "load_reference", "rounded_folder", "sharpen_moe"]
