"""Tiny random hybrid models (Qwen3.5 dense and MoE: Gated DeltaNet + gated attention; LFM2:
short convolutions + attention) as Hugging Face folders written by transformers, made to show
what the state layers get wrong:

- the delta rule's decays spread from strong to weak (a weak one carries a sequence's state over
  every prefill chunk, so a lost or misplaced state moves the logits at the end of the prompt);
- norms near unit scale and q/k projections larger (attention far from uniform);
- Qwen3.5's checkpoints carry a multi-token-prediction layer (`mtp.*`, config
  `mtp_num_hidden_layers`), which llama.cpp's converter expects: the tiny folders have one too.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from tests.support.tiny_models import TinySpec, load_reference

PROMPT = 150  # more than two of the delta rule's 64-token prefill chunks
CHUNK = 64  # the artifacts' prefill chunk: the runtime's chunks cut the prompt too
LINEAR = {
    "head_dim": 16,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4,
    "layer_types": ["linear_attention"] * 3 + ["full_attention"],
}
EXPERTS = {
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48,
}
SPECS = {
    "qwen3_5": TinySpec(arch="qwen3_5", layers=4, seed=101, extra=LINEAR),
    "qwen3_5_moe": TinySpec(arch="qwen3_5_moe", layers=4, seed=102, extra={**LINEAR, **EXPERTS}),
    # as LFM2-1.2B in miniature: convolutions around one attention layer, tied head
    "lfm2": TinySpec(
        arch="lfm2",
        layers=4,
        intermediate=192,  # block_auto_adjust_ff_dim: 2/3 of it, rounded to block_multiple_of
        tie=True,
        seed=103,
        extra={"layer_types": ["conv", "conv", "full_attention", "conv"], "block_multiple_of": 32},
    ),
}
GGUF_ARCH = {"qwen3_5": "qwen35", "qwen3_5_moe": "qwen35moe", "lfm2": "lfm2"}


def _decays(module, gen) -> None:
    """A_log and dt_bias so that per-token decays exp(g) run from ~0.5 to ~0.998 over heads."""
    import torch

    heads = module.A_log.shape[0]
    module.A_log.copy_(torch.linspace(-3.0, 0.0, heads))
    module.dt_bias.copy_(torch.linspace(-6.0, 0.0, heads))
    module.in_proj_a.weight.mul_(0.5)
    module.in_proj_b.weight.add_(0.05 * torch.randn(module.in_proj_b.weight.shape, generator=gen))


def sharpened(src: Path, dst: Path, seed: int) -> Path:
    """A copy with unit-scale norms, larger q/k projections and spread decays."""
    import torch

    if dst.exists():
        return dst
    shutil.copytree(src, dst)
    model = load_reference(src)
    gen = torch.Generator().manual_seed(seed)
    zero_centered = "qwen3_5" in model.config.model_type  # (1 + w) norms
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(("norm.weight", "layernorm.weight")):
                base = 0.0 if zero_centered and "linear_attn.norm" not in name else 1.0
                param.copy_(base + 0.1 * torch.randn(param.shape, generator=gen))
            elif name.endswith(("q_proj.weight", "k_proj.weight")):
                param.mul_(3.0)
        for layer in model.model.layers:
            if hasattr(layer, "linear_attn"):
                _decays(layer.linear_attn, gen)
    model.save_pretrained(dst)
    if zero_centered:
        add_mtp(dst, model.config, seed)
    if model.config.model_type == "qwen3_5_moe_text":  # released configs have no dense width
        _edit_config(dst, lambda c: {k: v for k, v in c.items() if k != "intermediate_size"})
    return dst


def _edit_config(folder: Path, edit) -> None:
    path = folder / "config.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text())), indent=2))


def add_mtp(folder: Path, config, seed: int) -> None:
    """One MTP layer as Qwen3.5's checkpoints store it (`mtp.*`, a full-attention decoder layer
    with its fc over [embedding; hidden]): transformers ignores it, llama.cpp's converter
    requires it."""
    import torch
    from safetensors.torch import load_file, save_file

    gen = torch.Generator().manual_seed(seed + 1)
    hidden, tensors = config.hidden_size, load_file(folder / "model.safetensors")
    last = f"model.layers.{config.num_hidden_layers - 1}."
    for name, value in list(tensors.items()):
        if name.startswith(last) and "linear_attn" not in name:
            tensors["mtp.layers.0." + name[len(last) :]] = value.clone()
    tensors["mtp.fc.weight"] = 0.1 * torch.randn((hidden, 2 * hidden), generator=gen)
    for norm in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
        tensors[f"mtp.{norm}.weight"] = torch.zeros(hidden)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    _edit_config(folder, lambda c: {**c, "mtp_num_hidden_layers": 1})


_BUILT: dict = {}


def hybrid_folder(factory, name: str) -> Path:
    """The sharpened tiny folder of family `name` (SPECS), once per test session."""
    key = ("folder", name)
    if key not in _BUILT:
        from tests.support.tiny_models import make_tiny_model

        root = _root(factory)
        spec = SPECS[name]
        _BUILT[key] = sharpened(make_tiny_model(root / "raw", spec), root / name, spec.seed)
    return _BUILT[key]


def hybrid_gguf(factory, name: str) -> Path:
    """The folder as llama.cpp's own converter writes it (f32), once per session."""
    from tests.support.llamacpp_convert import convert

    return convert(hybrid_folder(factory, name), _root(factory) / f"{name}.gguf")


def compiled_hybrid(
    factory,
    name: str,
    source: str = "hf",
    target: str = "cpu",
    quantization: str | None = None,
    kernels: str | None = None,
) -> Path:
    """The artifact of family `name` from its folder ("hf", q0f32 unless told) or its GGUF
    ("gguf"), compiled once per session with prefill chunks of CHUNK tokens (so a PROMPT
    takes three steps), f32 KV pages on cpu and the cpu linear `kernels` if told."""
    from mlcx.compile.model import CompileRequest
    from mlcx.kernels.cpu.kernel_config import LinearKernels
    from mlcx.targets.base import BuildOptions
    from tests.support.compile_cache import compile_model
    from tests.support.reference_pages import reference_pages

    key = (name, source, target, quantization) + ((kernels,) if kernels else ())
    if key not in _BUILT:
        model = hybrid_folder(factory, name) if source == "hf" else hybrid_gguf(factory, name)
        quant = quantization or ("q0f32" if source == "hf" else None)
        out = _root(factory) / "-".join(str(k) for k in key)
        request = CompileRequest(
            str(model), target, quant, out, prefill_chunk=CHUNK, **reference_pages(target)
        )
        if kernels:
            options = BuildOptions(linear_kernels=LinearKernels(kernels))
            request = dataclasses.replace(request, options=options)
        _BUILT[key] = compile_model(request)
    return _BUILT[key]


def _root(factory) -> Path:
    if "root" not in _BUILT:
        _BUILT["root"] = factory.mktemp("hybrid")
    return _BUILT["root"]


# Qwen3.5 at K-quant shapes: every matrix's in_features a multiple of 256
QWEN35_K = TinySpec(
    arch="qwen3_5",
    hidden=256,
    intermediate=512,
    layers=4,
    seed=104,
    extra={
        **LINEAR,
        "head_dim": 64,
        "linear_key_head_dim": 32,
        "linear_value_head_dim": 64,  # 4 v heads of 64: the output projection's 256
    },
)
